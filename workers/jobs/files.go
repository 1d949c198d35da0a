package jobs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"
)

// backupTempPrefix names files being written. It never matches a backup's
// name, so a crash mid-write leaves nothing that looks like a backup.
const backupTempPrefix = ".clawmem-backup-tmp-"

var backupName = regexp.MustCompile(`^memory-(backup|snapshot)-(\d{4}-\d{2}-\d{2})\.jsonl$`)

// BackupFileName is the file a backup of kind taken on day is written to:
// memory-backup-YYYY-MM-DD.jsonl or memory-snapshot-YYYY-MM-DD.jsonl (UTC).
func BackupFileName(kind string, day time.Time) string {
	return "memory-" + kind + "-" + day.UTC().Format(time.DateOnly) + ".jsonl"
}

// BackupFile describes one backup file, on disk or in the Object Store.
type BackupFile struct {
	Name  string    `json:"name"`
	Path  string    `json:"path,omitempty"` // on disk only
	Kind  string    `json:"kind"`
	Date  string    `json:"date"` // YYYY-MM-DD, from the name
	Size  int64     `json:"size"`
	Count int       `json:"count"` // memories
	Time  time.Time `json:"time"`  // written (disk) or uploaded (Object Store)
}

// pendingFile is a backup being written under a temporary name.
type pendingFile struct {
	f  *os.File
	bw *bufio.Writer
}

func (b *Backup) createPending() (*pendingFile, error) {
	f, err := os.CreateTemp(b.cfg.Dir, backupTempPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	var w io.Writer = f
	if b.wrap != nil {
		w = b.wrap(f)
	}
	return &pendingFile{f: f, bw: bufio.NewWriterSize(w, 1<<20)}, nil
}

// commit makes the file durable and gives it its name: data first (fsync),
// then the rename, then the directory entry (fsync of the directory).
func (p *pendingFile) commit(path string) (int64, error) {
	tmp := p.f.Name()
	err := p.bw.Flush()
	if err == nil {
		err = p.f.Sync()
	}
	var size int64
	if err == nil {
		var st os.FileInfo
		if st, err = p.f.Stat(); err == nil {
			size = st.Size()
		}
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return size, syncDir(filepath.Dir(path))
}

func (p *pendingFile) abort() {
	p.f.Close()
	os.Remove(p.f.Name())
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be opened for sync there; rename is durable
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// removeStaleTemps deletes what a crashed run left. Only one run at a time
// writes here: the job's mutex in this process, and the store's lock
// against any other process backing up the same store.
func (b *Backup) removeStaleTemps() {
	entries, err := os.ReadDir(b.cfg.Dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), backupTempPrefix) {
			if err := os.Remove(filepath.Join(b.cfg.Dir, e.Name())); err == nil {
				b.log.Info("removed an unfinished backup left by an earlier run", "file", e.Name())
			}
		}
	}
}

// prune deletes all but the newest Keep files of each kind. Newest is by
// the date in the name, not the file time, which copying may change.
func (b *Backup) prune() ([]string, error) {
	files, err := ListBackups(b.cfg.Dir, false)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, name := range surplus(files, b.cfg.Keep) {
		if err := os.Remove(filepath.Join(b.cfg.Dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("remove old backup: %w", err)
		}
		removed = append(removed, name)
	}
	return removed, nil
}

// surplus names the files beyond the newest keep of each kind.
func surplus(files []BackupFile, keep int) []string {
	byKind := map[string][]string{}
	for _, f := range files {
		byKind[f.Kind] = append(byKind[f.Kind], f.Name)
	}
	var out []string
	for _, names := range byKind {
		slices.Sort(names)
		if len(names) > keep {
			out = append(out, names[:len(names)-keep]...)
		}
	}
	slices.Sort(out)
	return out
}

// ListBackups returns the backup files in dir, oldest first. count reads
// each file to count its memories (lines).
func ListBackups(dir string, count bool) ([]BackupFile, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []BackupFile
	for _, e := range entries {
		m := backupName.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		f := BackupFile{Name: e.Name(), Path: filepath.Join(dir, e.Name()), Kind: m[1], Date: m[2],
			Size: info.Size(), Time: info.ModTime(), Count: -1}
		if count {
			if f.Count, err = countLines(f.Path); err != nil {
				return nil, err
			}
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b BackupFile) int { return strings.Compare(a.Date+a.Kind, b.Date+b.Kind) })
	return out, nil
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 256<<10)
	n := 0
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
