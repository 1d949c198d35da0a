package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/internal/schedule"
)

// Run takes the first backup after FirstDelay, then on the schedule, and
// answers backup requests, until ctx ends. A run in progress then stops
// (leaving the earlier backups as they were) and Run returns after it.
func (b *Backup) Run(ctx context.Context) error {
	// Every run is waited for (scheduled ones by cron, the others in wg),
	// so none touches the store after Run returns and the caller closes it.
	var (
		wg      sync.WaitGroup
		gate    sync.Mutex
		stopped bool
		sub     *nats.Subscription
	)
	defer func() {
		if sub != nil {
			_ = sub.Unsubscribe()
		}
		gate.Lock()
		stopped = true
		gate.Unlock()
		wg.Wait()
	}()
	if b.js != nil {
		var err error
		sub, err = b.js.Conn().QueueSubscribe(schemas.AdminSubject(schemas.OpBackup), "clawmem-backup", func(m *nats.Msg) {
			gate.Lock()
			if stopped {
				gate.Unlock()
				data, _ := json.Marshal(schemas.Failure(schemas.CodeInternal, "clawmem is shutting down; retry", nil))
				_ = m.Respond(data)
				return
			}
			wg.Add(1)
			gate.Unlock()
			defer wg.Done()
			b.answer(ctx, m)
		})
		if err != nil {
			return fmt.Errorf("backup: subscribe: %w", err)
		}
		// The server has the subscription before Ready says so.
		if err := b.js.Conn().Flush(); err != nil {
			return fmt.Errorf("backup: subscribe: %w", err)
		}
	}
	close(b.ready)
	run := func(why string) {
		res, err := b.RunOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			b.log.Error("backup failed", "trigger", why, "err", err)
		case err == nil:
			b.log.Info("backup written", "trigger", why, "memories", res.Count, "files", len(res.Files),
				"uploaded", res.Uploaded, "removed", len(res.Removed), "took", res.Duration.Round(time.Millisecond))
		}
	}
	if b.cfg.FirstDelay > 0 {
		wg.Go(func() {
			t := time.NewTimer(b.cfg.FirstDelay)
			defer t.Stop()
			select {
			case <-ctx.Done():
			case <-t.C:
				run("start")
			}
		})
	}
	if b.cfg.Schedule != "off" {
		cr := schedule.New(b.log)
		if _, err := cr.AddFunc(b.cfg.Schedule, func() { run("schedule") }); err != nil {
			return err
		}
		cr.Start()
		defer func() { <-cr.Stop().Done() }()
	}
	b.log.Info("backups scheduled", "dir", b.cfg.Dir, "schedule", b.cfg.Schedule, "keep", b.cfg.Keep,
		"first", b.cfg.FirstDelay, "vectors", b.cfg.WithVectors, "objectStore", b.js != nil)
	<-ctx.Done()
	return nil
}

// answer runs a requested backup and replies with a schemas.ToolResult
// whose details are the BackupResult.
func (b *Backup) answer(ctx context.Context, m *nats.Msg) {
	res, err := b.RunOnce(ctx)
	var reply schemas.ToolResult
	if err != nil {
		b.log.Error("requested backup failed", "err", err)
		reply = schemas.Failure(schemas.CodeInternal, "backup failed: "+err.Error(), nil)
	} else {
		b.log.Info("backup written on request", "memories", res.Count, "files", len(res.Files), "uploaded", res.Uploaded)
		reply = schemas.Reply(res.Summary(), res)
	}
	data, _ := json.Marshal(reply)
	if err := m.Respond(data); err != nil {
		b.log.Warn("backup reply not sent", "err", err)
	}
}
