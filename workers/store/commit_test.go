package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/stage"
)

// A batch whose change cannot reach the memory log is not acknowledged
// until the log takes it (it waits, spending no delivery); then the memory
// is there once and the work is done.
func TestStoreAcksOnlyWhatIsDurable(t *testing.T) {
	_, _, js := natsembed.StartTest(t)
	if err := topology.Ensure(context.Background(), js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	eng, _ := testkit.Engine(t, "", testkit.LocalEmbedder(t, 256))
	sw := New(js, eng, stage.Config{Backoff: []time.Duration{20 * time.Millisecond}}, stage.NewMetrics(nil), nil, slog.New(slog.DiscardHandler))
	var calls atomic.Int32
	sw.Durable = func(context.Context, int) error {
		if calls.Add(1) == 1 {
			return errors.New("log unreachable")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = sw.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	body, _ := json.Marshal(schemas.WorkBatch{V: schemas.Version, AgentID: "main", Source: "capture", Items: []schemas.CaptureItem{
		{SourceID: "s1", Text: "The office wifi is called moonbase", Category: schemas.CategoryFact, Importance: 0.7, Dedup: 0.95}}})
	if _, err := js.Publish(ctx, schemas.WorkCandidates+".main", body); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, func() error {
		s, err := js.Stream(ctx, schemas.StreamWork)
		if err != nil {
			return err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		if calls.Load() < 2 || info.State.Msgs != 0 {
			return fmt.Errorf("%d log attempts, %d work messages left", calls.Load(), info.State.Msgs)
		}
		return nil
	})
	ms, err := eng.List(ctx, memory.Admin(), memory.ListOptions{Limit: 10})
	if err != nil || len(ms) != 1 {
		t.Fatalf("memories: %d %v", len(ms), err)
	}
}

func TestStorageFull(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("commit: %w", errors.New("database or disk is full (13)")),
		fmt.Errorf("write: %w", syscall.ENOSPC),
	} {
		if !storageFull(err) {
			t.Errorf("%v: not taken for a full disk", err)
		}
	}
	for _, err := range []error{nil, errors.New("constraint failed"), syscall.EIO} {
		if storageFull(err) {
			t.Errorf("%v: taken for a full disk", err)
		}
	}
}
