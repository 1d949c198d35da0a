package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/query"
)

// both returns the two clients over one fresh engine: over NATS to a
// running query service, and in process.
func both(t *testing.T) map[string]client.Client {
	t.Helper()
	eng, _ := testkit.Engine(t, "", testkit.LocalEmbedder(t, 256))
	_, nc, _ := natsembed.StartTest(t)
	log := slog.New(slog.DiscardHandler)
	svc := query.New(nc, eng, query.DefaultConfig(), prometheus.NewRegistry(), log)
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	return map[string]client.Client{
		"nats":  client.NewNATS(nc),
		"local": client.NewLocal(query.New(nil, eng, query.DefaultConfig(), nil, log), nil),
	}
}

func details[T any](t *testing.T, res schemas.ToolResult) T {
	t.Helper()
	var d T
	raw, _ := json.Marshal(res.Details)
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("details %s: %v", raw, err)
	}
	return d
}

func call(t *testing.T, c client.Client, op, agent string, req any) schemas.ToolResult {
	t.Helper()
	res, err := c.Call(context.Background(), op, agent, req)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return res
}

func wantCode(t *testing.T, res schemas.ToolResult, code string) {
	t.Helper()
	d := details[schemas.ErrorDetails](t, res)
	if !res.IsError || d.Code != code {
		t.Fatalf("reply %+v, want error code %s", res, code)
	}
}

// TestConformance holds both clients to the same answers for every tool
// operation, the admin view, and the errors a front end must tell apart.
func TestConformance(t *testing.T) {
	for name, c := range both(t) {
		t.Run(name, func(t *testing.T) {
			agent := "conf-" + name // each client its own memories
			st := details[schemas.StoreDetails](t, call(t, c, schemas.OpStore, agent, schemas.StoreRequest{Text: "I live in Paris"}))
			if st.Action != "created" {
				t.Fatalf("store: %+v", st)
			}
			moved := details[schemas.StoreDetails](t, call(t, c, schemas.OpStore, agent, schemas.StoreRequest{Text: "I moved to Berlin"}))
			if len(moved.Superseded) != 1 || moved.Superseded[0] != st.ID {
				t.Fatalf("store Berlin: %+v", moved)
			}
			rec := details[schemas.RecallDetails](t, call(t, c, schemas.OpRecall, agent, schemas.RecallRequest{Query: "Where do I live?"}))
			if rec.Count == 0 || rec.Memories[0].ID != moved.ID {
				t.Fatalf("recall: %+v", rec)
			}
			ctxRes := call(t, c, schemas.OpContext, agent, schemas.ContextRequest{Prompt: "Where do I live these days?"})
			if ctxRes.IsError || strings.Contains(details[schemas.ContextDetails](t, ctxRes).PrependContext, "Paris") {
				t.Fatalf("context: %+v", ctxRes)
			}
			list := details[schemas.ListDetails](t, call(t, c, schemas.OpList, agent, schemas.ListRequest{IncludeSuperseded: true}))
			if list.Count != 2 {
				t.Fatalf("list: %+v", list)
			}
			show := details[schemas.ShowDetails](t, call(t, c, schemas.OpShow, agent, schemas.ShowRequest{MemoryID: moved.ID}))
			if len(show.Replaced) != 1 || show.Replaced[0].ID != st.ID {
				t.Fatalf("show: %+v", show)
			}
			text := "I moved to Berlin in 2025"
			up := details[schemas.UpdateDetails](t, call(t, c, schemas.OpUpdate, agent, schemas.UpdateRequest{MemoryID: moved.ID[:8], Text: &text}))
			if up.ID != moved.ID {
				t.Fatalf("update: %+v", up)
			}
			stats := call(t, c, schemas.OpStats, agent, schemas.StatsRequest{})
			if stats.IsError || !strings.Contains(stats.Content[0].Text, "Total: 1") {
				t.Fatalf("stats: %+v", stats)
			}
			// Errors: not found, another agent's memory, a denied scope,
			// invalid input, an ambiguous prefix (as admin, over both).
			wantCode(t, call(t, c, schemas.OpForget, agent, schemas.ForgetRequest{MemoryID: "ffffffff-ffff-4fff-8fff-ffffffffffff"}), schemas.CodeNotFound)
			wantCode(t, call(t, c, schemas.OpShow, "someone-else", schemas.ShowRequest{MemoryID: moved.ID}), schemas.CodeNotFound)
			wantCode(t, call(t, c, schemas.OpRecall, agent, schemas.RecallRequest{Query: "x", Scope: "agent:someone-else"}), schemas.CodeDenied)
			wantCode(t, call(t, c, schemas.OpRecall, agent, json.RawMessage(`{"query": 7}`)), schemas.CodeInvalid)
			forgot := details[schemas.ForgetDetails](t, call(t, c, schemas.OpForget, agent, schemas.ForgetRequest{MemoryID: moved.ID}))
			if forgot.Action != "deleted" {
				t.Fatalf("forget: %+v", forgot)
			}
			// An agent id that is no NATS token is refused before anything
			// is sent or run.
			if _, err := c.Call(context.Background(), schemas.OpList, "a.b", schemas.ListRequest{}); err == nil {
				t.Fatal("agent a.b accepted")
			}
		})
	}
	// Ambiguous prefix, as admin: two ids sharing their first 8 characters.
	for name, c := range both(t) {
		t.Run(name+"/ambiguous", func(t *testing.T) {
			imp := call(t, c, schemas.OpImport, "", schemas.ImportRequest{Memories: []schemas.Memory{
				{ID: "abcdef01-0000-4000-8000-000000000001", Text: "The staging cluster is in eu-west-1", Scope: "global"},
				{ID: "abcdef01-0000-4000-8000-000000000002", Text: "The release train leaves every Thursday", Scope: "global"},
			}})
			if imp.IsError {
				t.Fatalf("import: %+v", imp)
			}
			wantCode(t, call(t, c, schemas.OpForget, "", schemas.ForgetRequest{MemoryID: "abcdef01"}), schemas.CodeAmbiguous)
		})
	}
}

// No clawmem on NATS: the NATS client says so at once, with ErrDown.
func TestNATSClientWhenClawmemIsDown(t *testing.T) {
	_, nc, _ := natsembed.StartTest(t)
	c := client.NewNATS(nc)
	_, err := c.Call(context.Background(), schemas.OpRecall, "main", schemas.RecallRequest{Query: "x"})
	if !errors.Is(err, client.ErrDown) {
		t.Fatalf("err %v, want ErrDown", err)
	}
}

// A store another process holds: the local client refuses with
// engine.ErrLocked, and opens once it is let go.
func TestLocalClientOnALockedStore(t *testing.T) {
	cfg, err := config.Load("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := client.OpenLocal(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.OpenLocal(ctx, cfg); !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	res := call(t, first, schemas.OpStore, "main", schemas.StoreRequest{Text: "I prefer tea over coffee"})
	if res.IsError {
		t.Fatalf("store: %+v", res)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := client.OpenLocal(ctx, cfg)
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	defer again.Close()
	if d := details[schemas.ListDetails](t, call(t, again, schemas.OpList, "main", schemas.ListRequest{})); d.Count != 1 {
		t.Fatalf("list after reopen: %+v", d)
	}
}

// A query service that never answers: the NATS client gives up at the
// caller's deadline, not at its own 30 s default.
func TestNATSClientHonoursTheDeadline(t *testing.T) {
	_, nc, _ := natsembed.StartTest(t)
	sub, err := nc.SubscribeSync(schemas.ServiceSubject("main", schemas.OpRecall))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = client.NewNATS(nc).Call(ctx, schemas.OpRecall, "main", schemas.RecallRequest{Query: "x"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the deadline", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("gave up after %v", took)
	}
}

// PerCall connects for each call and holds nothing between calls: the
// store can be opened by someone else in between.
func TestPerCallHoldsNothingBetweenCalls(t *testing.T) {
	cfg, err := config.Load("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dials := 0
	c := client.NewPerCall(func(ctx context.Context) (client.Client, error) {
		dials++
		return client.OpenLocal(ctx, cfg)
	})
	defer c.Close()
	if res := call(t, c, schemas.OpStore, "main", schemas.StoreRequest{Text: "The backup drive is in the top drawer"}); res.IsError {
		t.Fatalf("store: %+v", res)
	}
	other, err := client.OpenLocal(context.Background(), cfg)
	if err != nil {
		t.Fatalf("store still held after the call: %v", err)
	}
	other.Close()
	rec := details[schemas.RecallDetails](t, call(t, c, schemas.OpRecall, "main", schemas.RecallRequest{Query: "where is the backup drive"}))
	if rec.Count != 1 || dials != 2 {
		t.Fatalf("recall %+v after %d dials", rec, dials)
	}
}

// Target picks the store, a named NATS server or a running clawmem the way
// every command does.
func TestTargetChoosesWhoAnswers(t *testing.T) {
	cfg, err := config.Load("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	local := client.Target{Config: cfg, Name: "test"}
	if url, named := local.URL(); named || !strings.HasPrefix(url, "nats://127.0.0.1:") || local.Running() || local.Remote() {
		t.Fatalf("nothing runs: url %q named %v running %v", url, named, local.Running())
	}
	c, err := local.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*client.Local); !ok {
		t.Fatalf("nothing runs: %T, want the store in process", c)
	}
	// The store is held: a second local client says so.
	if _, err := local.Client(context.Background()); !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("second client: %v, want ErrLocked", err)
	}
	c.Close()

	srv, _, _ := natsembed.StartTest(t)
	named := client.Target{Config: cfg, NATSURL: srv.ClientURL(), Name: "test"}
	if !named.Running() || !named.Remote() {
		t.Fatal("a named server is where a clawmem runs")
	}
	nc, err := named.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Call(context.Background(), schemas.OpStats, "", schemas.StatsRequest{}); !errors.Is(err, client.ErrDown) {
		t.Fatalf("no query service on the named server: %v, want ErrDown", err)
	}
	// --db wins over a named server for the store, not for the pipeline.
	db := client.Target{Config: cfg, NATSURL: srv.ClientURL(), DB: filepath.Join(t.TempDir(), "other")}
	if db.Remote() || !db.Running() || db.Store().DBPath != db.DB || cfg.DBPath == db.DB {
		t.Fatalf("--db: remote %v running %v store %s (config %s)", db.Remote(), db.Running(), db.Store().DBPath, cfg.DBPath)
	}
}

// A replica that dies with a read in hand never answers it: the client asks
// once more, and a replica that lives answers within the caller's deadline.
func TestNATSClientRetriesAReadOnce(t *testing.T) {
	srv, nc, _ := natsembed.StartTest(t)
	crasher, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	if _, err := crasher.QueueSubscribe(schemas.ServiceSubject("main", schemas.OpRecall), "clawmem-query", func(*nats.Msg) {
		crasher.Close() // dies before it answers
		close(got)
	}); err != nil {
		t.Fatal(err)
	}
	crasher.Flush()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	type result struct {
		res schemas.ToolResult
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		res, err := client.NewNATS(nc).Call(ctx, schemas.OpRecall, "main", schemas.RecallRequest{Query: "tea"})
		done <- result{res, err}
	}()
	<-got
	// A replica that lives, started after the first one took the request.
	eng, _ := testkit.Engine(t, "", testkit.LocalEmbedder(t, 64))
	svc := query.New(nc, eng, query.DefaultConfig(), nil, slog.New(slog.DiscardHandler))
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	r := <-done
	if r.err != nil || r.res.IsError {
		t.Fatalf("read after a replica died: %+v %v", r.res, r.err)
	}
	if took := time.Since(start); took < 2*time.Second-100*time.Millisecond {
		t.Fatalf("answered after %v: the first attempt should have waited half the deadline", took)
	}
	svc.Stop()
	// A write is not sent twice: with no one answering it times out.
	wctx, wcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer wcancel()
	black, _ := srv.Connect()
	defer black.Close()
	var writes atomic.Int32
	black.QueueSubscribe(schemas.ServiceSubject("w", schemas.OpStore), "clawmem-query", func(*nats.Msg) { writes.Add(1) })
	black.Flush()
	if _, err := client.NewNATS(nc).Call(wctx, schemas.OpStore, "w", schemas.StoreRequest{Text: "x"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unanswered write: %v", err)
	}
	black.Flush()
	if n := writes.Load(); n != 1 {
		t.Fatalf("the write was sent %d times", n)
	}
}

// The list's filters and cursor, and the stats' days, through both
// clients: cursor pages cover the list once, in order; bad cursors, time
// ranges and day counts are invalid input.
func TestListPagesAndStatsDays(t *testing.T) {
	for name, c := range both(t) {
		t.Run(name, func(t *testing.T) {
			var ms []schemas.Memory
			now := time.Now().UnixMilli()
			for i := range 25 {
				text := fmt.Sprintf("Note %02d: the build cache lives on disk %d", i, i)
				if i%5 == 0 {
					text = fmt.Sprintf("Note %02d: Kestrel is the staging host", i)
				}
				ms = append(ms, schemas.Memory{ID: fmt.Sprintf("%08x-0000-4000-8000-000000000000", i+1), Text: text,
					Scope: "agent:main", Timestamp: now - int64(i)*3_600_000})
			}
			if imp := call(t, c, schemas.OpImport, "", schemas.ImportRequest{Memories: ms, NoDedup: true}); imp.IsError {
				t.Fatalf("import: %+v", imp)
			}
			var ids []string
			req := schemas.ListRequest{Limit: 10}
			for range 5 {
				d := details[schemas.ListDetails](t, call(t, c, schemas.OpList, "main", req))
				for _, m := range d.Memories {
					ids = append(ids, m.ID)
				}
				if d.NextCursor == "" {
					break
				}
				req.Cursor = d.NextCursor
			}
			if len(ids) != 25 || ids[0] != ms[0].ID || ids[24] != ms[24].ID {
				t.Fatalf("cursor pages: %d memories %v", len(ids), ids)
			}
			d := details[schemas.ListDetails](t, call(t, c, schemas.OpList, "main", schemas.ListRequest{Text: "kestrel", Limit: 50,
				Since: now - 12*3_600_000}))
			if d.Count != 3 || d.NextCursor != "" {
				t.Fatalf("text and since: %+v", d)
			}
			st := details[struct {
				ByDay map[string]int `json:"byDay"`
			}](t, call(t, c, schemas.OpStats, "main", schemas.StatsRequest{Days: 7}))
			total := 0
			for _, n := range st.ByDay {
				total += n
			}
			if total != 25 || len(st.ByDay) > 2 {
				t.Fatalf("by day: %v", st.ByDay)
			}
			for _, bad := range []any{
				schemas.ListRequest{Cursor: "yesterday"},
				schemas.ListRequest{Cursor: "12:" + "not-a-uuid"},
				schemas.ListRequest{Since: 500, Until: 100},
				schemas.ListRequest{Since: -1},
				schemas.StatsRequest{Days: 400},
				schemas.StatsRequest{Days: -1},
			} {
				op := schemas.OpList
				if _, ok := bad.(schemas.StatsRequest); ok {
					op = schemas.OpStats
				}
				wantCode(t, call(t, c, op, "main", bad), schemas.CodeInvalid)
			}
		})
	}
}
