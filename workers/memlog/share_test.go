package memlog_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/memlog"
)

// Two writers' stores over one log: each publishes only the scopes whose
// partitions it holds, names itself in its entries, and its follower
// applies the other's entries and skips its own, so a change it made
// after publishing is never rolled back by its own older entry.
func TestWritersSkipTheirOwnEntriesAndDropOthersPartitions(t *testing.T) {
	ctx := context.Background()
	js := setup(t)
	a := open(t, t.TempDir(), false)
	defer a.Close()
	b := open(t, t.TempDir(), false)
	defer b.Close()
	pubA := memlog.NewPublisher(js, a, 16, nil)
	pubA.Writer, pubA.Holds = "writer-a", func(scope string) bool { return scope == "agent:x" }
	pubB := memlog.NewPublisher(js, b, 16, nil)
	pubB.Writer = "writer-b"

	mine, err := a.Add(ctx, mem("x's first fact", "agent:x", 1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	// A change to a partition writer A does not hold (left from before
	// a crash, say): dropped, not published.
	if _, err := a.Add(ctx, mem("y's fact written by the wrong writer", "agent:y", 0, 1, 0)); err != nil {
		t.Fatal(err)
	}
	if n, err := pubA.Flush(ctx); err != nil || n != 2 {
		t.Fatalf("flush A: %d %v", n, err)
	}
	if left, _ := a.Changes(ctx, 0, 10); len(left) != 0 {
		t.Fatalf("%d changes left after the flush", len(left))
	}
	theirs, err := b.Add(ctx, mem("y's fact", "agent:y", 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pubB.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// A changes its memory again before its follower reads the log.
	newer := "x's first fact, corrected"
	if _, err := a.Update(ctx, mine[0].ID, engine.Patch{Text: &newer, Vector: []float32{1, 0.1, 0}}, engine.AllScopes()); err != nil {
		t.Fatal(err)
	}
	f := memlog.NewFollower(js, a, nil)
	f.Self = "writer-a"
	if _, err := f.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := a.Get(ctx, mine[0].ID, engine.AllScopes())
	if err != nil || got.Text != newer {
		t.Fatalf("A's own memory after following: %q %v, want its newer text", got.Text, err)
	}
	if ok, _ := a.Has(ctx, theirs[0].ID); !ok {
		t.Fatal("A did not apply B's memory")
	}
	// The log: A's first entry and B's; nothing of agent:y from A.
	replica := open(t, t.TempDir(), true)
	defer replica.Close()
	if rep, err := memlog.Rebuild(ctx, js, replica, nil); err != nil || rep.Memories != 2 {
		t.Fatalf("rebuild: %+v %v", rep, err)
	}
	s, _ := js.Stream(ctx, schemas.StreamMemories)
	m, err := s.GetLastMsgForSubject(ctx, schemas.MemoryLogSubject(schemas.ScopePartition("agent:x", 16), "agent:x", mine[0].ID))
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get(schemas.HeaderLogWriter) != "writer-a" || m.Header.Get(jetstream.MsgIDHeader) != fmt.Sprintf("writer-a:%s@1", mine[0].ID) {
		t.Fatalf("A's entry headers: %v", m.Header)
	}
}

// Writers share the partitions evenly, one writer per partition at any
// time: a second writer gets half, a writer that stops gives its half
// back at once, and one that vanishes (its connection gone, its leases
// left to expire) is taken over within the TTL.
func TestShareSplitsAndTakesOver(t *testing.T) {
	const n, ttl = 8, 1500 * time.Millisecond
	srv, _, js := natsembed.StartTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leasesBucket(ctx, t, js, ttl)
	var mu sync.Mutex
	working := map[int]string{} // partition → the writer working it
	var overlaps []string
	start := func(ctx context.Context, id string) (*memlog.Share, *nats.Conn) {
		kv, nc := leasesOn(ctx, t, srv)
		s := memlog.NewShare(kv, id, n, ttl, nil)
		s.Work = func(ctx context.Context, p int) error {
			mu.Lock()
			if other, ok := working[p]; ok {
				overlaps = append(overlaps, fmt.Sprintf("partition %d: %s and %s", p, other, id))
			}
			working[p] = id
			mu.Unlock()
			<-ctx.Done()
			mu.Lock()
			delete(working, p)
			mu.Unlock()
			return nil
		}
		go s.Run(ctx)
		return s, nc
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if len(overlaps) > 0 {
			t.Errorf("two writers at once: %v", overlaps)
		}
	})
	a, _ := start(ctx, "a")
	waitUntil(t, "a holding every partition", func() bool { return len(a.Held()) == n })
	bctx, stopB := context.WithCancel(ctx)
	b, _ := start(bctx, "b")
	waitUntil(t, "half each", func() bool { return len(a.Held()) == n/2 && len(b.Held()) == n/2 })
	stopB()
	began := time.Now()
	waitUntil(t, "a holding every partition after b stopped", func() bool { return len(a.Held()) == n })
	if took := time.Since(began); took > ttl {
		t.Errorf("a stopped writer's partitions came back after %v, not at once", took)
	}

	// c vanishes: its connection closes, nothing is released.
	cctx, stopC := context.WithCancel(ctx)
	defer stopC()
	c, ncC := start(cctx, "c")
	waitUntil(t, "half each with c", func() bool { return len(a.Held()) == n/2 && len(c.Held()) == n/2 })
	ncC.Close()
	began = time.Now()
	waitUntil(t, "a holding every partition after c vanished", func() bool { return len(a.Held()) == n })
	if took := time.Since(began); took > 2*ttl {
		t.Errorf("a vanished writer's partitions were taken over after %v (TTL %v)", took, ttl)
	}
	t.Logf("takeover after a writer vanished: %v (TTL %v)", time.Since(began).Round(time.Millisecond), ttl)
}

// A lease this clawmem cannot read (another version's) is never taken
// over while it lasts: the writer takes every other partition, and that
// one once it expires.
func TestShareLeavesAnotherVersionsLeaseToExpire(t *testing.T) {
	const n, ttl = 4, 2 * time.Second
	_, _, js := natsembed.StartTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kv := leasesBucket(ctx, t, js, ttl)
	if _, err := kv.Create(ctx, schemas.LeaseKey(2), []byte(`{"v":9,"holder":"a-newer-clawmem"}`)); err != nil {
		t.Fatal(err)
	}
	s := memlog.NewShare(kv, "me", n, ttl, nil)
	go s.Run(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for len(s.Held()) < n-1 {
		if time.Now().After(deadline) {
			t.Fatalf("held %v, want every partition but 2", s.Held())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s.Holds(2) {
		t.Fatal("took over a lease of another version while it lasted")
	}
	for !s.Holds(2) {
		if time.Now().After(deadline) {
			t.Fatalf("held %v: the expired lease was never taken", s.Held())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A writer that starts while JetStream cannot answer (its node down, as a
// node restarted beside a lost one finds it) waits for it rather than
// stopping; and one whose JetStream goes away mid-run keeps its share and
// still sees a writer that arrives after it came back.
func TestShareWaitsOutJetStreamOutages(t *testing.T) {
	const n, ttl = 4, 3 * time.Second
	srv, _, js := natsembed.StartTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leasesBucket(ctx, t, js, ttl)
	share := func(id string, logs *testkit.Buffer) *memlog.Share {
		kv, _ := leasesOn(ctx, t, srv, natsembed.Redial...)
		return memlog.NewShare(kv, id, n, ttl, slog.New(slog.NewTextHandler(logs, nil)))
	}
	down := func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
	var logs testkit.Buffer
	a := share("a", &logs)
	down()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	testkit.WaitFor(t, 20*time.Second, func() error {
		select {
		case err := <-done:
			t.Fatalf("Run returned while JetStream was down: %v", err)
		default:
		}
		if !strings.Contains(logs.String(), "JetStream unavailable; retrying") {
			return fmt.Errorf("no failed watch yet; log:\n%s", logs.String())
		}
		return nil
	})
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, func() error {
		if got := a.Held(); len(got) != n {
			return fmt.Errorf("a holds %v after JetStream came back", got)
		}
		return nil
	})

	// Down again for a moment mid-run, then a second writer arrives: a
	// still watches the presences, so it gives half up.
	down()
	time.Sleep(ttl / 2)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	b := share("b", &testkit.Buffer{})
	go b.Run(ctx)
	testkit.WaitFor(t, 20*time.Second, func() error {
		if len(a.Held()) != n/2 || len(b.Held()) != n/2 {
			return fmt.Errorf("a holds %v, b %v; a's log:\n%s", a.Held(), b.Held(), logs.String())
		}
		return nil
	})
	select {
	case err := <-done:
		t.Fatalf("Run returned: %v", err)
	default:
	}
}

// leasesBucket creates the writers' leases bucket, whose entries last ttl.
func leasesBucket(ctx context.Context, t *testing.T, js jetstream.JetStream, ttl time.Duration) jetstream.KeyValue {
	t.Helper()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: schemas.BucketLeases, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// leasesOn opens the leases bucket over a connection of its own, as each
// writer has one.
func leasesOn(ctx context.Context, t *testing.T, srv *natsembed.Server, opts ...nats.Option) (jetstream.KeyValue, *nats.Conn) {
	t.Helper()
	nc, js := natsembed.ConnectTest(t, srv, opts...)
	kv, err := js.KeyValue(ctx, schemas.BucketLeases)
	if err != nil {
		t.Fatal(err)
	}
	return kv, nc
}

// A writer alone takes every partition in its first round and says so in
// one line, and gives them all up at stop in one line; a partition that
// moves between writers later (another writer arriving) gets a line of its
// own, on both sides.
func TestShareLogsASingleNodeOnceAndEachMove(t *testing.T) {
	const n, ttl = 8, 1500 * time.Millisecond
	srv, _, js := natsembed.StartTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leasesBucket(ctx, t, js, ttl)
	start := func(ctx context.Context, id string, log *testkit.Buffer) (*memlog.Share, chan error) {
		kv, _ := leasesOn(ctx, t, srv)
		s := memlog.NewShare(kv, id, n, ttl, log.Logger())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		return s, done
	}
	var logA, logB testkit.Buffer
	actx, stopA := context.WithCancel(ctx)
	a, doneA := start(actx, "a", &logA)
	waitUntil(t, "a holding every partition", func() bool { return len(a.Held()) == n })
	<-a.Rounds()
	if logA.Logged("writer: took partitions") != 1 || !strings.Contains(logA.String(), `partitions=0-7 of=8`) ||
		logA.Logged("writer: partition taken") != 0 {
		t.Fatalf("a alone, want one line for its partitions:\n%s", logA.String())
	}
	b, doneB := start(ctx, "b", &logB)
	waitUntil(t, "half each", func() bool { return len(a.Held()) == n/2 && len(b.Held()) == n/2 })
	if got := logA.Logged("writer: partition given up"); got != n/2 {
		t.Errorf("a logged %d partitions given up to b, want %d:\n%s", got, n/2, logA.String())
	}
	if got := logB.Logged("writer: partition taken"); got != n/2 || logB.Logged("writer: took partitions") != 0 {
		t.Errorf("b logged %d partitions taken from a, want %d each on its own line:\n%s", got, n/2, logB.String())
	}
	stopA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	if logA.Logged("writer: gave up partitions") != 1 || logA.Logged("writer: partition given up") != n/2 {
		t.Errorf("a's stop, want one line for the partitions it held:\n%s", logA.String())
	}
	cancel()
	<-doneB
}

// waitUntil polls ok for up to 10 s, failing the test with what it was
// waiting for.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
