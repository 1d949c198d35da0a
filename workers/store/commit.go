package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/stage"
)

// durable waits until Durable succeeds. A log that cannot be reached for a
// while (a cluster electing new leaders) is waited out here, with the
// messages kept in progress, rather than spending their deliveries and
// dead-lettering memories that are safely stored. stage.ErrNotWriter-wrapped
// failures (the writer's lease is lost) end the wait at once.
func (w *Worker) durable(ctx context.Context, partition int) error {
	wait := 50 * time.Millisecond
	for {
		err := w.Durable(ctx, partition)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, stage.ErrNotWriter) || ctx.Err() != nil:
			return fmt.Errorf("memory log: %w", err)
		}
		w.log.Warn("memory log unreachable; the batch waits for it", "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("memory log: %w", err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// invalidate ends the memory an item names (smart extraction's DELETE), as
// the item's agent: a memory it cannot write, or one that is gone or ended
// already, is refused and counted, not retried.
func (w *Worker) invalidate(ctx context.Context, agent string, it schemas.CaptureItem) error {
	_, err := w.eng.Archive(ctx, memory.Agent(agent), it.Invalidates)
	switch {
	case err == nil:
		w.outcome.WithLabelValues("invalidated").Inc()
		return nil
	case memory.IsInputError(err):
		w.outcome.WithLabelValues("rejected").Inc()
		w.log.Info("invalidation refused", "agent", agent, "memory", it.Invalidates, "err", err)
		return nil
	}
	w.outcome.WithLabelValues("error").Inc()
	return err
}

// storageFull reports a write that failed for want of disk space: SQLite's
// "database or disk is full" (SQLITE_FULL) or ENOSPC.
func storageFull(err error) bool {
	return err != nil && (errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), "database or disk is full"))
}
