package memlog_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/memlog"
)

func open(t *testing.T, dir string, noLog bool) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), dir, sqlitestore.Options{Dimensions: 3, NoChangeLog: noLog})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mem(text, scope string, v ...float32) schemas.Memory {
	return schemas.Memory{Text: text, Vector: v, Category: schemas.CategoryFact, Scope: scope, Importance: 0.7}
}

func state(t *testing.T, s *sqlitestore.Store) []string {
	t.Helper()
	var out []string
	err := s.Iterate(context.Background(), engine.IterateOptions{Scopes: engine.AllScopes(), WithVectors: true}, func(m schemas.Memory) error {
		out = append(out, strings.Join([]string{m.ID, m.Text, m.Scope, m.SupersededBy, string(schemas.EncodeVector(m.Vector))}, "|"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func setup(t *testing.T) jetstream.JetStream {
	t.Helper()
	_, _, js := natsembed.StartTest(t)
	if err := topology.Ensure(context.Background(), js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	return js
}

// Every write path reaches the log; a rebuild from the log is the same
// store; a deleted memory stays deleted; the log keeps one entry per memory
// however often it changes.
func TestRebuildFromTheLogIsTheSameStore(t *testing.T) {
	ctx := context.Background()
	js := setup(t)
	writer := open(t, t.TempDir(), false)
	defer writer.Close()
	added, err := writer.Add(ctx, mem("I live in Paris", "agent:main", 1, 0, 0), mem("tea", "global", 0, 1, 0),
		mem("scratch", "custom:x", 0, 0, 1), mem("moves", "agent:main", 1, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	moved, err := writer.Add(ctx, mem("I moved to Berlin", "agent:main", 0.9, 0.1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Update(ctx, added[0].ID, engine.Patch{Invalidate: &engine.Invalidation{At: 5, SupersededBy: moved[0].ID}}, engine.AllScopes()); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		imp := 0.1 + float64(i)/100
		if _, err := writer.Update(ctx, added[1].ID, engine.Patch{Importance: &imp}, engine.AllScopes()); err != nil {
			t.Fatal(err)
		}
	}
	other := "agent:ops"
	if _, err := writer.Update(ctx, added[3].ID, engine.Patch{Scope: &other}, engine.AllScopes()); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Delete(ctx, added[2].ID, engine.AllScopes()); err != nil {
		t.Fatal(err)
	}
	imp := mem("imported", "global", 0.5, 0.5, 0)
	imp.ID = "6b0f2d4e-0000-4000-8000-000000000001"
	if err := writer.Import(ctx, imp); err != nil {
		t.Fatal(err)
	}
	pub := memlog.NewPublisher(js, writer, schemas.DefaultPartitions, nil)
	if n, err := pub.Flush(ctx); err != nil || n == 0 {
		t.Fatalf("flush: %d %v", n, err)
	}
	if left, _ := writer.Changes(ctx, 0, 10); len(left) != 0 {
		t.Fatalf("published changes not trimmed: %+v", left)
	}

	rebuilt := open(t, t.TempDir(), true)
	defer rebuilt.Close()
	rep, err := memlog.Rebuild(ctx, js, rebuilt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := state(t, writer), state(t, rebuilt); !slices.Equal(a, b) {
		t.Fatalf("writer:\n%s\nrebuilt:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	if rep.Memories != 5 || rep.LogBytes == 0 {
		t.Fatalf("report: %+v", rep)
	}
	if ok, _ := rebuilt.Has(ctx, added[2].ID); ok {
		t.Fatal("a deleted memory came back in the rebuild")
	}
	// One message per memory subject: 6 memories ever, one of them moved
	// scope (its old subject keeps a stale state that replay overrides).
	s, _ := js.Stream(ctx, schemas.StreamMemories)
	info, _ := s.Info(ctx)
	if info.State.Msgs > 7 {
		t.Fatalf("log holds %d messages for 6 memories changed 25 times", info.State.Msgs)
	}
	// A second rebuild of the rebuilt store applies nothing new.
	if again, err := memlog.Rebuild(ctx, js, rebuilt, nil); err != nil || again.Entries != 0 {
		t.Fatalf("rebuild again: %+v %v", again, err)
	}
}

// Changes committed but not published (a crash before the publish) are
// published at the next start.
func TestChangesSurviveACrashBeforeThePublish(t *testing.T) {
	ctx := context.Background()
	js := setup(t)
	dir := t.TempDir()
	writer := open(t, dir, false)
	if _, err := writer.Add(ctx, mem("kept through a crash", "global", 1, 0, 0)); err != nil {
		t.Fatal(err)
	}
	writer.Close() // no publisher ran
	writer = open(t, dir, false)
	defer writer.Close()

	if n, err := memlog.NewPublisher(js, writer, 16, nil).Flush(ctx); err != nil || n != 1 {
		t.Fatalf("flush after restart: %d %v", n, err)
	}
	replica := open(t, t.TempDir(), true)
	defer replica.Close()
	if rep, err := memlog.Rebuild(ctx, js, replica, nil); err != nil || rep.Memories != 1 {
		t.Fatalf("rebuild: %+v %v", rep, err)
	}
}

// A follower applies writes as they are published, and WaitFor bounds the
// wait for a sequence it has not reached with ErrStale.
func TestFollowerFollowsAndWaits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	js := setup(t)
	writer := open(t, t.TempDir(), false)
	defer writer.Close()
	replica := open(t, t.TempDir(), true)
	defer replica.Close()
	pub := memlog.NewPublisher(js, writer, 16, nil)
	go pub.Run(ctx)
	f := memlog.NewFollower(js, replica, nil)
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	added, err := writer.Add(ctx, mem("followed", "global", 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ok, _ := replica.Has(ctx, added[0].ID); !ok; ok, _ = replica.Has(ctx, added[0].ID) {
		if time.Now().After(deadline) {
			t.Fatal("the replica never applied the write")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := f.WaitFor(ctx, f.Applied(), time.Second); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitFor(ctx, f.Applied()+1000, 100*time.Millisecond); !errors.Is(err, memlog.ErrStale) {
		t.Fatalf("wait for an unwritten sequence: %v, want ErrStale", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("follower: %v", err)
	}
}

// A log message that does not decode, or carries another dimension, stops
// the follower with a clear error and applies nothing of its batch.
func TestFollowerStopsOnBadEntries(t *testing.T) {
	ctx := context.Background()
	for name, body := range map[string]string{
		"not json":       `{"v":1,`,
		"unknown op":     `{"v":1,"op":"merge","id":"6b0f2d4e-0000-4000-8000-000000000009"}`,
		"other version":  `{"v":9,"op":"delete","id":"6b0f2d4e-0000-4000-8000-000000000009"}`,
		"bad id":         `{"v":1,"op":"delete","id":"../x"}`,
		"other model":    `{"v":1,"op":"put","id":"6b0f2d4e-0000-4000-8000-000000000009","memory":{"id":"6b0f2d4e-0000-4000-8000-000000000009","text":"x","category":"fact","scope":"global","importance":0.5,"timestamp":1},"vector":"AACAPwAAAAA="}`,
		"memory missing": `{"v":1,"op":"put","id":"6b0f2d4e-0000-4000-8000-000000000009","vector":"AACAPwAAAAAAAAAA"}`,
	} {
		t.Run(name, func(t *testing.T) {
			js := setup(t)
			writer := open(t, t.TempDir(), false)
			defer writer.Close()
			if _, err := writer.Add(ctx, mem("good", "global", 1, 0, 0)); err != nil {
				t.Fatal(err)
			}
			if _, err := memlog.NewPublisher(js, writer, 16, nil).Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := js.Publish(ctx, "clawmem.mem.0.global.bad", []byte(body)); err != nil {
				t.Fatal(err)
			}
			replica := open(t, t.TempDir(), true)
			defer replica.Close()
			_, err := memlog.Rebuild(ctx, js, replica, nil)
			if !errors.Is(err, schemas.ErrInvalid) || !strings.Contains(err.Error(), "memory log sequence 2") {
				t.Fatalf("err %v, want an invalid entry at sequence 2", err)
			}
			// The good entry (sequence 1) is applied only if it came in an
			// earlier batch than the bad one; how the fetch splits them is
			// timing. Either way the store's position and its memories
			// agree, and nothing from the bad entry's batch is applied.
			seq, _ := replica.LogSeq(ctx)
			if seq > 1 {
				t.Fatalf("log seq %d after a batch refused at sequence 2", seq)
			}
			if st, _ := replica.Stats(ctx, engine.AllScopes()); uint64(st.Total) != seq {
				t.Fatalf("%d memories applied at log seq %d: part of a refused batch was applied", st.Total, seq)
			}
		})
	}
}

// A store from before the log (its writes never recorded) is logged whole
// into an empty log, and only into an empty one.
func TestBootstrapLogsAnOlderStore(t *testing.T) {
	ctx := context.Background()
	js := setup(t)
	dir := t.TempDir()
	old := open(t, dir, true)
	if _, err := old.Add(ctx, mem("from before the log", "global", 1, 0, 0), mem("me too", "agent:main", 0, 1, 0)); err != nil {
		t.Fatal(err)
	}
	old.Close()
	writer := open(t, dir, false)
	defer writer.Close()
	pub := memlog.NewPublisher(js, writer, 16, nil)
	if n, err := pub.Bootstrap(ctx); err != nil || n != 2 {
		t.Fatalf("bootstrap: %d %v", n, err)
	}
	if _, err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := pub.Bootstrap(ctx); err != nil || n != 0 {
		t.Fatalf("bootstrap of a log that has entries: %d %v", n, err)
	}
	replica := open(t, t.TempDir(), true)
	defer replica.Close()
	if _, err := memlog.Rebuild(ctx, js, replica, nil); err != nil {
		t.Fatal(err)
	}
	if a, b := state(t, writer), state(t, replica); !slices.Equal(a, b) || len(a) != 2 {
		t.Fatalf("writer %v, rebuilt %v", a, b)
	}
}

// A follower whose JetStream goes away for a while (a node down) keeps
// following: it applies what is written after JetStream came back, and
// does not stop.
func TestFollowerFollowsAcrossAnOutage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, _, js := natsembed.StartTest(t)
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	writer := open(t, t.TempDir(), false)
	defer writer.Close()
	replica := open(t, t.TempDir(), true)
	defer replica.Close()
	pub := memlog.NewPublisher(js, writer, 16, nil)
	_, fjs := natsembed.ConnectTest(t, srv, natsembed.Redial...)
	var logs testkit.Buffer
	f := memlog.NewFollower(fjs, replica, slog.New(slog.NewTextHandler(&logs, nil)))
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	write := func(text string) string {
		t.Helper()
		added, err := writer.Add(ctx, mem(text, "global", 0, 0, 1))
		if err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 30*time.Second, func() error {
			_, err := pub.Flush(ctx)
			return err
		})
		testkit.WaitFor(t, 30*time.Second, func() error {
			select {
			case err := <-done:
				t.Fatalf("the follower stopped: %v; log:\n%s", err, logs.String())
			default:
			}
			if ok, _ := replica.Has(ctx, added[0].ID); !ok {
				return fmt.Errorf("%q not applied; log:\n%s", text, logs.String())
			}
			return nil
		})
		return added[0].ID
	}
	write("before the outage")
	srv.Shutdown()
	srv.WaitForShutdown()
	time.Sleep(8 * time.Second)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	write("after the outage")
}

// A batch whose acknowledgements never come (the stream's leader went
// down with the acks in flight; here a subscriber swallows the publishes
// where no stream listens) fails within AckWait instead of holding every
// later Flush behind it, and trims nothing: once the log answers, the same
// change goes again.
func TestALostAckFailsTheBatchWithinItsBound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, nc, js := natsembed.StartTest(t)
	swallow, err := nc.SubscribeSync(schemas.MemoriesPrefix + ".>")
	if err != nil {
		t.Fatal(err)
	}
	writer := open(t, t.TempDir(), false)
	defer writer.Close()
	if _, err := writer.Add(ctx, mem("kept while the acks are lost", "global", 1, 0, 0)); err != nil {
		t.Fatal(err)
	}
	pub := memlog.NewPublisher(js, writer, 16, nil)
	pub.AckWait = 300 * time.Millisecond
	start := time.Now()
	n, err := pub.Flush(ctx)
	if !errors.Is(err, memlog.ErrAckLost) || n != 0 {
		t.Fatalf("flush with lost acks: %d %v", n, err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("the lost ack held the flush %s", took)
	}
	if _, err := swallow.NextMsg(time.Second); err != nil {
		t.Fatalf("the change was not published at all: %v", err)
	}
	// A second Flush is not blocked behind the first.
	if _, err := pub.Flush(ctx); !errors.Is(err, memlog.ErrAckLost) {
		t.Fatalf("second flush: %v", err)
	}
	swallow.Unsubscribe()
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	if n, err := pub.Flush(ctx); err != nil || n != 1 {
		t.Fatalf("flush once the log answers: %d %v", n, err)
	}
	replica := open(t, t.TempDir(), true)
	defer replica.Close()
	if rep, err := memlog.Rebuild(ctx, js, replica, nil); err != nil || rep.Memories != 1 {
		t.Fatalf("rebuild: %+v %v", rep, err)
	}
}
