package stage

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"

	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
)

// A stage settles a batch while it handles the next, one batch at a time,
// and a stage told to stop returns only once the batch in hand is handled
// and every handled message is acknowledged: none is handled twice.
func TestStageSettlesEveryBatchBeforeItReturns(t *testing.T) {
	_, _, js := natsembed.StartTest(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	const n = 300
	var handled atomic.Int64
	var seen sync.Map
	var dup atomic.Bool
	runCtx, stop := context.WithCancel(ctx)
	s := &Stage{Name: "t", JS: js, Stream: "T", Subjects: []string{"t.>"}, Config: Config{Batch: 16, AckWait: time.Second},
		Metrics: NewMetrics(nil), Log: testLog(t),
		Handle: func(_ context.Context, msgs []jetstream.Msg) []error {
			for _, m := range msgs {
				if _, loaded := seen.LoadOrStore(string(m.Data()), true); loaded {
					dup.Store(true)
				}
			}
			time.Sleep(2 * time.Millisecond)
			if handled.Add(int64(len(msgs))) >= n/2 {
				stop() // mid-Stream: the batch in hand must still be settled
			}
			return make([]error, len(msgs))
		}}
	for i := range n {
		if _, err := js.Publish(ctx, "t.x", fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Run(runCtx); err != nil {
		t.Fatal(err)
	}
	info, err := js.Consumer(ctx, "T", "t")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := info.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Every handled message is acknowledged (those fetched but not
	// handled are handed back).
	if ci.AckFloor.Stream != uint64(handled.Load()) {
		t.Fatalf("after the stage returned: acked up to %d, %d handled", ci.AckFloor.Stream, handled.Load())
	}
	// A second run takes the rest, each message once.
	rest, stop2 := context.WithCancel(ctx)
	defer stop2()
	s.Handle = func(_ context.Context, msgs []jetstream.Msg) []error {
		for _, m := range msgs {
			if _, loaded := seen.LoadOrStore(string(m.Data()), true); loaded {
				dup.Store(true)
			}
		}
		if handled.Add(int64(len(msgs))) == n {
			stop2()
		}
		return make([]error, len(msgs))
	}
	runWithin(t, s, rest, 20*time.Second, func() string {
		return fmt.Sprintf("the second run handled %d of %d; %s", handled.Load(), n, serverView(js, "T", "t"))
	})
	if dup.Load() || handled.Load() != n {
		t.Fatalf("handled %d of %d, a duplicate: %v", handled.Load(), n, dup.Load())
	}
}

// A pipelined stage prepares batch n+1 while batch n commits, commits one
// batch at a time in the order they were prepared, and acknowledges every
// message once, including the batches in hand when it is told to stop.
func TestStagePipelinesPrepareWithCommit(t *testing.T) {
	_, _, js := natsembed.StartTest(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "P", Subjects: []string{"p.>"}}); err != nil {
		t.Fatal(err)
	}
	const n = 320
	for i := range n {
		if _, err := js.Publish(ctx, "p.x", fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu         sync.Mutex
		prepared   []string // each batch's first message, in order of preparation
		committed  []string
		committing atomic.Int64
		overlaps   atomic.Int64 // preparations that ran during a commit
		concurrent atomic.Bool  // two commits at once
		acked      sync.Map
		dup        atomic.Bool
		total      atomic.Int64
	)
	runCtx, stop := context.WithCancel(ctx)
	s := &Stage{Name: "p", JS: js, Stream: "P", Subjects: []string{"p.>"}, Config: Config{Batch: 16, AckWait: 5 * time.Second},
		Metrics: NewMetrics(nil), Log: slog.New(slog.DiscardHandler),
		Prepare: func(_ context.Context, msgs []jetstream.Msg) func(context.Context) []error {
			if committing.Load() > 0 {
				overlaps.Add(1)
			}
			first := string(msgs[0].Data())
			mu.Lock()
			prepared = append(prepared, first)
			mu.Unlock()
			time.Sleep(3 * time.Millisecond)
			return func(context.Context) []error {
				if committing.Add(1) > 1 {
					concurrent.Store(true)
				}
				defer committing.Add(-1)
				time.Sleep(15 * time.Millisecond)
				mu.Lock()
				committed = append(committed, first)
				mu.Unlock()
				for _, m := range msgs {
					if _, loaded := acked.LoadOrStore(string(m.Data()), true); loaded {
						dup.Store(true)
					}
				}
				if total.Add(int64(len(msgs))) >= n {
					stop()
				}
				return make([]error, len(msgs))
			}
		}}
	runWithin(t, s, runCtx, 30*time.Second, func() string { return fmt.Sprintf("committed %d of %d", total.Load(), n) })
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(prepared, committed) {
		t.Fatalf("prepared %v, committed %v", prepared, committed)
	}
	if concurrent.Load() || dup.Load() || total.Load() != n {
		t.Fatalf("commits at once %v, a message twice %v, %d of %d", concurrent.Load(), dup.Load(), total.Load(), n)
	}
	if overlaps.Load() == 0 {
		t.Fatalf("no batch was prepared while another committed (%d batches)", len(prepared))
	}
	ci, err := js.Consumer(ctx, "P", "p")
	if err != nil {
		t.Fatal(err)
	}
	info, err := ci.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.AckFloor.Stream != n {
		t.Fatalf("acked up to %d of %d", info.AckFloor.Stream, n)
	}
	t.Logf("%d batches, %d prepared during a commit", len(prepared), overlaps.Load())
}

// A provider's outage (schemas.ErrUnavailable) is retried past MaxDeliver
// and never dead-letters a message; any other failure still does, with
// its reason.
func TestStageWaitsOutAProviderOutage(t *testing.T) {
	_, _, js := natsembed.StartTest(t)
	ctx := context.Background()
	createStreams(t, js, "T", schemas.StreamDLQ)
	var tries sync.Map // body -> *atomic.Int64
	var stored atomic.Int64
	runCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	s := &Stage{Name: "t", JS: js, Stream: "T", Subjects: []string{"t.>"},
		Config:  Config{Batch: 4, AckWait: 5 * time.Second, MaxDeliver: 2, Backoff: []time.Duration{10 * time.Millisecond}},
		Metrics: NewMetrics(nil), Log: slog.New(slog.DiscardHandler),
		Handle: func(_ context.Context, msgs []jetstream.Msg) []error {
			errs := make([]error, len(msgs))
			for i, m := range msgs {
				c, _ := tries.LoadOrStore(string(m.Data()), new(atomic.Int64))
				n := c.(*atomic.Int64).Add(1)
				switch {
				case string(m.Data()) == "poison":
					errs[i] = fmt.Errorf("not an event")
				case n <= 3:
					errs[i] = schemas.Unavailable(fmt.Errorf("HTTP 503"))
				default:
					if stored.Add(1) == 3 {
						go func() { time.Sleep(200 * time.Millisecond); stop() }()
					}
				}
			}
			return errs
		}}
	for _, b := range []string{"a", "b", "poison", "c"} {
		if _, err := js.Publish(ctx, "t.x", []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Run(runCtx); err != nil {
		t.Fatal(err)
	}
	if stored.Load() != 3 {
		t.Fatalf("%d of 3 messages handled after the outage", stored.Load())
	}
	dlq, err := js.Stream(ctx, schemas.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dlq.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("%d messages dead-lettered, want only the poison one", info.State.Msgs)
	}
	m, err := dlq.GetMsg(ctx, info.State.FirstSeq)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "poison" || m.Header.Get(schemas.HeaderDLQReason) != "not an event" {
		t.Fatalf("dead letter %q, reason %q", m.Data, m.Header.Get(schemas.HeaderDLQReason))
	}
}

// A stage whose handler blocks while messages wait, or that only hands
// its batches back (never the partition's writer), is noticed as stalled
// after StallAfter (the gauge and a log line), and the blocked one moving
// again once the handler returns; a stage with nothing to do, or one that
// keeps acknowledging, is never stalled.
func TestStageStallIsNoticed(t *testing.T) {
	tests := []struct {
		name      string
		publish   int
		blocks    bool
		notWriter bool // hands every batch back: stalled, and stays so
	}{
		{name: "handler blocks", publish: 5, blocks: true},
		{name: "never the writer", publish: 5, notWriter: true},
		{name: "nothing to do", publish: 0},
		{name: "slow but settling", publish: 40},
	}
	_, _, js := natsembed.StartTest(t)
	ctx := context.Background()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream, subject := fmt.Sprintf("S%d", i), fmt.Sprintf("s%d.x", i)
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject}}); err != nil {
				t.Fatal(err)
			}
			for j := range tt.publish {
				if _, err := js.Publish(ctx, subject, fmt.Appendf(nil, "%d", j)); err != nil {
					t.Fatal(err)
				}
			}
			release := make(chan struct{})
			var logs testkit.Buffer
			m := NewMetrics(nil)
			s := &Stage{Name: "stalls", JS: js, Stream: stream, Subjects: []string{subject},
				Config:  Config{Batch: 1, AckWait: 600 * time.Millisecond, StallAfter: 1200 * time.Millisecond},
				Metrics: m, Log: slog.New(slog.NewTextHandler(&logs, nil)),
				Handle: func(_ context.Context, msgs []jetstream.Msg) []error {
					errs := make([]error, len(msgs))
					switch {
					case tt.blocks:
						<-release // deaf to its context, as a hung call is
					case tt.notWriter:
						for i := range errs {
							errs[i] = fmt.Errorf("%w: lease lost", ErrNotWriter)
						}
					default:
						time.Sleep(100 * time.Millisecond)
					}
					return errs
				}}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- s.Run(runCtx) }()
			stalled := func() float64 {
				var g dto.Metric
				_ = m.Stalled.WithLabelValues("stalls").Write(&g)
				return g.GetGauge().GetValue()
			}
			seen := false
			for end := time.Now().Add(4 * time.Second); time.Now().Before(end) && !seen; {
				seen = stalled() == 1
				time.Sleep(20 * time.Millisecond)
			}
			if want := tt.blocks || tt.notWriter; seen != want {
				t.Fatalf("stalled %v, want %v; log:\n%s", seen, want, logs.String())
			}
			if tt.blocks {
				if !strings.Contains(logs.String(), "stage stalled") {
					t.Errorf("no log line says the stage stalled:\n%s", logs.String())
				}
				close(release)
				for end := time.Now().Add(4 * time.Second); stalled() == 1; {
					if time.Now().After(end) {
						t.Fatalf("still stalled after the handler returned; log:\n%s", logs.String())
					}
					time.Sleep(20 * time.Millisecond)
				}
				if !strings.Contains(logs.String(), "stage moving again") {
					t.Errorf("no log line says the stage moves again:\n%s", logs.String())
				}
			}
			stop()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Messages a stage fetched but did not handle before it stopped, and
// those it handed back because it is not the partition's writer, come
// again at once and do not count towards MaxDeliver: none is
// dead-lettered, each is handled once.
func TestStageHandsBackWithoutCounting(t *testing.T) {
	_, _, js := natsembed.StartTest(t)
	ctx := context.Background()
	createStreams(t, js, "T", schemas.StreamDLQ)
	const n = 40
	for i := range n {
		if _, err := js.Publish(ctx, "t.x", fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var handled sync.Map
	var count atomic.Int64
	notWriter := atomic.Int64{}
	s := &Stage{Name: "t", JS: js, Stream: "T", Subjects: []string{"t.>"},
		// A message in flight to a stage as it stops is lost to it and
		// comes again after the ack wait, counted: MaxDeliver leaves room
		// for that one, not for the hand-backs and naks as well.
		Config:  Config{Batch: 4, AckWait: 2 * time.Second, MaxDeliver: 2},
		Metrics: NewMetrics(nil), Log: testLog(t)}
	for run := range 3 {
		runCtx, stop := context.WithCancel(ctx)
		s.Handle = func(_ context.Context, msgs []jetstream.Msg) []error {
			errs := make([]error, len(msgs))
			for i, m := range msgs {
				// The first run is not the writer of a few.
				if run == 0 && notWriter.Load() < 6 {
					notWriter.Add(1)
					errs[i] = fmt.Errorf("%w: lease lost", ErrNotWriter)
					continue
				}
				if _, dup := handled.LoadOrStore(string(m.Data()), true); !dup {
					count.Add(1)
				}
			}
			// Each run stops after a few batches, with more fetched.
			if count.Load() >= int64(n*(run+1)/3) {
				stop()
			}
			return errs
		}
		runWithin(t, s, runCtx, 20*time.Second, func() string {
			stop()
			return fmt.Sprintf("run %d: %d of %d handled; %s", run, count.Load(), n, serverView(js, "T", "t"))
		})
	}
	if count.Load() != n {
		t.Errorf("%d of %d handled", count.Load(), n)
	}
	dlq, err := js.Stream(ctx, schemas.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := dlq.Info(ctx); err != nil || info.State.Msgs != 0 {
		t.Errorf("dead letters: %d (%v)", info.State.Msgs, err)
	}
}

// A message its publisher sent with expectations (Nats-Expected-Stream,
// as clawmem's event publisher and watcher do) is dead-lettered all the
// same: the copy does not carry them to the DLQ, which would refuse it.
func TestDeadLetterDropsPublishExpectations(t *testing.T) {
	_, _, js := natsembed.StartTest(t)
	ctx := context.Background()
	createStreams(t, js, "T", schemas.StreamDLQ)
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: "t.x", Data: []byte("poison")}, jetstream.WithExpectStream("T"), jetstream.WithMsgID("m1")); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	s := &Stage{Name: "t", JS: js, Stream: "T", Subjects: []string{"t.>"}, Config: Config{AckWait: 5 * time.Second},
		Metrics: NewMetrics(nil), Log: slog.New(slog.DiscardHandler),
		Handle: func(_ context.Context, msgs []jetstream.Msg) []error {
			errs := make([]error, len(msgs))
			for i := range errs {
				errs[i] = Permanent(fmt.Errorf("not an event"))
			}
			return errs
		}}
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		dlq, err := js.Stream(ctx, schemas.StreamDLQ)
		if err != nil {
			t.Fatal(err)
		}
		if dlq.CachedInfo().State.Msgs == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the message was not dead-lettered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// createStreams creates the test stream T (t.>) and the DLQ stream.
func createStreams(t *testing.T, js jetstream.JetStream, names ...string) {
	t.Helper()
	subjects := map[string]string{"T": "t.>", schemas.StreamDLQ: schemas.DLQSubject}
	for _, name := range names {
		if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: name, Subjects: []string{subjects[name]}}); err != nil {
			t.Fatal(err)
		}
	}
}

// runWithin runs s until ctx ends, and fails the test when it has not
// returned within limit, with what progress says it got done.
// serverView is what the server says a stage's consumer holds, for a
// test's failure: a stalled stage shows whether messages wait undelivered
// and whether any pull request is open.
func serverView(js jetstream.JetStream, stream, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := js.Consumer(ctx, stream, name)
	if err != nil {
		return err.Error()
	}
	ci, err := c.Info(ctx)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("consumer: delivered %d (stream %d), ack floor %d, ack pending %d, redelivered %d, undelivered %d, pull requests open %d",
		ci.Delivered.Consumer, ci.Delivered.Stream, ci.AckFloor.Stream, ci.NumAckPending, ci.NumRedelivered, ci.NumPending, ci.NumWaiting)
}

// testLog writes a stage's log to the test's output, shown when it fails.
func testLog(t *testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(t.Output(), nil)) }

func runWithin(t *testing.T, s *Stage, ctx context.Context, limit time.Duration, progress func() string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(limit):
		t.Fatal(progress())
	}
}
