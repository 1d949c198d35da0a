package jobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/schemas"
)

// upload copies files to the Object Store, then prunes it like the disk.
func (b *Backup) upload(ctx context.Context, files []BackupFile) error {
	obs, err := b.js.ObjectStore(ctx, schemas.BucketBackups)
	if err != nil {
		return fmt.Errorf("object store %s: %w", schemas.BucketBackups, err)
	}
	for _, f := range files {
		if err := putBackup(ctx, obs, f); err != nil {
			return err
		}
	}
	objs, err := ListBackupObjects(ctx, b.js)
	if err != nil {
		return err
	}
	for _, name := range surplus(objs, b.cfg.Keep) {
		if err := obs.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return fmt.Errorf("delete old copy %s: %w", name, err)
		}
	}
	return nil
}

func putBackup(ctx context.Context, obs jetstream.ObjectStore, f BackupFile) error {
	r, err := os.Open(f.Path)
	if err != nil {
		return err
	}
	defer r.Close()
	meta := jetstream.ObjectMeta{Name: f.Name, Description: "clawmem " + f.Kind + " of " + f.Date,
		Metadata: map[string]string{"kind": f.Kind, "date": f.Date, "count": strconv.Itoa(f.Count)}}
	if _, err := obs.Put(ctx, meta, r); err != nil {
		return fmt.Errorf("upload %s: %w", f.Name, err)
	}
	return nil
}

// ListBackupObjects returns the backup copies in the Object Store, oldest
// first.
func ListBackupObjects(ctx context.Context, js jetstream.JetStream) ([]BackupFile, error) {
	obs, err := js.ObjectStore(ctx, schemas.BucketBackups)
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", schemas.BucketBackups, err)
	}
	infos, err := obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", schemas.BucketBackups, err)
	}
	var out []BackupFile
	for _, info := range infos {
		m := backupName.FindStringSubmatch(info.Name)
		if m == nil {
			continue
		}
		count := -1
		if c, err := strconv.Atoi(info.Metadata["count"]); err == nil {
			count = c
		}
		out = append(out, BackupFile{Name: info.Name, Kind: m[1], Date: m[2], Size: int64(info.Size), Count: count, Time: info.ModTime})
	}
	slices.SortFunc(out, func(a, b BackupFile) int { return strings.Compare(a.Date+a.Kind, b.Date+b.Kind) })
	return out, nil
}
