package client_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/workers/jobs"
)

// No clawmem on NATS: a backup request fails at once with ErrDown, not
// when its ten minutes are up; a NATS that cannot be reached fails what
// needs it, while backup files are still listed.
func TestNATSPipelineWhenClawmemIsDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, _, _ := natsembed.StartTest(t)
	p := client.NewNATSPipeline(func() (*nats.Conn, error) { return srv.Connect() })
	defer p.Close()
	_, err := p.BackupNow(ctx)
	if !errors.Is(err, client.ErrDown) || !strings.Contains(err.Error(), "no clawmem store worker answers backup requests") || ctx.Err() != nil {
		t.Fatalf("backup with nothing listening: %v (ctx %v)", err, ctx.Err())
	}
	if _, err := p.DeadLetters(ctx, ""); err == nil || !strings.Contains(err.Error(), "has clawmem run here?") {
		t.Fatalf("dead letters on a NATS without clawmem's streams: %v", err)
	}

	dir := t.TempDir()
	name := jobs.BackupFileName(jobs.BackupKindBackup, time.Now())
	if err := os.WriteFile(filepath.Join(dir, name), []byte("{}\n{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("connect to NATS at nats://127.0.0.1:1: connection refused")
	unreachable := client.NewNATSPipeline(func() (*nats.Conn, error) { return nil, refused })
	defer unreachable.Close()
	list, err := unreachable.Backups(ctx, dir)
	if err != nil || len(list.Local) != 1 || list.Local[0].Count != 2 || list.ObjectStoreError != refused.Error() || list.ObjectStore == nil {
		t.Fatalf("backups without NATS: %+v %v", list, err)
	}
	if _, err := unreachable.DeadLetters(ctx, ""); !errors.Is(err, refused) {
		t.Fatalf("dead letters without NATS: %v", err)
	}
	if _, _, err := unreachable.OpenBackup(ctx, "memory-backup-1999-01-01.jsonl", dir); !errors.Is(err, refused) ||
		!strings.Contains(err.Error(), "Object Store is unreachable") {
		t.Fatalf("open a backup without NATS: %v", err)
	}
}
