package offline_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/cmd/clawmem/internal/offline"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/natsauth"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/jobs"
	"github.com/clawmem/clawmem/workers/lessons"
)

// pipelineTarget is one Pipeline with what the suite needs around it.
type pipelineTarget struct {
	p client.Pipeline
	// withJS runs fn with a JetStream on the NATS the pipeline uses, to
	// seed it and look at it.
	withJS func(fn func(jetstream.JetStream))
	// backups is where BackupNow writes; uploaded, whether it also copies
	// to the Object Store (a running clawmem does, a direct backup not).
	backups  string
	uploaded bool
}

const seededMemories = 3

// seedMemories stores seededMemories memories in cfg's store and returns
// the engine's store, still open.
func seedMemories(t *testing.T, cfg *config.Config) storeopen.EngineStore {
	t.Helper()
	eng, st, err := storeopen.Engine(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for i := range seededMemories {
		if _, err := eng.Store(context.Background(), memory.Admin(), memory.StoreRequest{
			Text: fmt.Sprintf("Host db-%d.internal runs the staging database number %d", i, i), Scope: "global"}, memory.DedupTool); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func loadConfig(t *testing.T, dir string) *config.Config {
	t.Helper()
	cfg, err := config.Load("", dir)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startDataDirNATS serves dir's NATS store as clawmem up would.
func startDataDirNATS(t *testing.T, dataDir string) (*natsembed.Server, jetstream.JetStream) {
	t.Helper()
	srv, err := natsembed.Start(natsembed.Options{StoreDir: filepath.Join(dataDir, "nats"), Port: -1,
		Base: func() (*server.Options, error) { return natsauth.ServerOptions(dataDir) }})
	if err != nil {
		t.Fatal(err)
	}
	auth, err := natsauth.ClientOption(natsauth.AdminSeed(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := srv.Connect(auth)
	if err != nil {
		srv.Stop()
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return srv, js
}

// pipelines returns the two pipelines, each on a fresh NATS with the
// topology clawmem up creates and a store of seededMemories memories:
// over NATS to a running clawmem (its store worker answering backup
// requests), and in process on the data dir of a stopped one.
func pipelines(t *testing.T) map[string]pipelineTarget {
	t.Helper()
	ctx := context.Background()

	srv, _, js := natsembed.StartTest(t)
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	running := loadConfig(t, t.TempDir())
	st := seedMemories(t, running)
	job, err := jobs.NewBackup(st, js, jobs.BackupConfig{Dir: running.Jobs.Backup.Dir, Schedule: "off", FirstDelay: -1},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	jobCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = job.Run(jobCtx) })
	t.Cleanup(func() { stop(); wg.Wait(); st.Close() })
	// Run subscribes in its goroutine: wait for it, so that a backup
	// request cannot meet "no responders".
	testkit.WaitFor(t, 10*time.Second, func() error {
		if !srv.GlobalAccount().SubscriptionInterest(schemas.AdminSubject(schemas.OpBackup)) {
			return errors.New("the backup job does not listen yet")
		}
		return nil
	})
	remote := client.NewNATSPipeline(func() (*nats.Conn, error) { return srv.Connect() })

	stopped := loadConfig(t, t.TempDir())
	seedMemories(t, stopped).Close()
	s, sjs := startDataDirNATS(t, stopped.DataDir)
	if err := topology.Ensure(ctx, sjs, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	off := offline.NewPipeline(stopped)
	return map[string]pipelineTarget{
		"nats": {p: remote, withJS: func(fn func(jetstream.JetStream)) { fn(js) }, backups: running.Jobs.Backup.Dir, uploaded: true},
		"offline": {p: off, backups: stopped.Jobs.Backup.Dir, withJS: func(fn func(jetstream.JetStream)) {
			// As between two commands: the pipeline lets go of the
			// data dir, which is served meanwhile as clawmem up would.
			off.Close()
			srv, js := startDataDirNATS(t, stopped.DataDir)
			defer srv.Stop()
			fn(js)
		}},
	}
}

func publish(t *testing.T, js jetstream.JetStream, subject string, h nats.Header, body string) {
	t.Helper()
	if _, err := js.PublishMsg(context.Background(), &nats.Msg{Subject: subject, Header: h, Data: []byte(body)}); err != nil {
		t.Fatal(err)
	}
}

// deadLetterHeaders are the headers a stage writes (see workers/stage/deadletter.go).
func deadLetterHeaders(stage, subject, reason string, attempts int) nats.Header {
	h := nats.Header{}
	h.Set(schemas.HeaderDLQStage, stage)
	h.Set(schemas.HeaderDLQReason, reason)
	h.Set(schemas.HeaderDLQAttempts, strconv.Itoa(attempts))
	h.Set(schemas.HeaderDLQSubject, subject)
	h.Set(schemas.HeaderDLQStream, schemas.StreamEvents)
	h.Set(schemas.HeaderDLQSequence, "7")
	h.Set(schemas.HeaderDLQTime, "2026-03-01T10:00:00Z")
	h.Set(schemas.HeaderDLQWorker, "host/42")
	return h
}

// TestPipelineConformance: dead letters listed, shown, replayed and
// purged; distill jobs, queue and a run of the extractive distiller over a
// published transcript; a backup written, listed and opened — the same on
// both pipelines.
func TestPipelineConformance(t *testing.T) {
	ctx := context.Background()
	agentEnd := schemas.EventSubject(schemas.KindAgentEnd, "main")
	candidates := schemas.WorkItemSubject(schemas.WorkCandidates, "main", schemas.DefaultPartitions)
	for name, tg := range pipelines(t) {
		t.Run(name, func(t *testing.T) {
			p := tg.p
			defer p.Close()
			if got, err := p.DeadLetters(ctx, ""); err != nil || got == nil || len(got) != 0 {
				t.Fatalf("empty DLQ: %v %v", got, err)
			}
			tg.withJS(func(js jetstream.JetStream) {
				h := deadLetterHeaders("capture", agentEnd, "embed: 503 Service Unavailable", 5)
				h.Set("Trace-Id", "t-1")
				publish(t, js, schemas.DLQSubjectFor("capture", agentEnd), h, `{"kind":"agent_end","sessionKey":"s-replay"}`)
				publish(t, js, schemas.DLQSubjectFor("capture", agentEnd), nil, `{not json`) // by hand: no headers
				publish(t, js, schemas.DLQSubjectFor("store", candidates), deadLetterHeaders("store", candidates, "version 99", 1), `{"v":99}`)
				publish(t, js, schemas.DLQSubjectFor("distill", agentEnd), deadLetterHeaders("distill", agentEnd, "llm down", 5), `{}`)
				// The distill consumer as the worker makes it, with one
				// session end waiting.
				if _, err := js.CreateOrUpdateConsumer(ctx, schemas.StreamEvents, jetstream.ConsumerConfig{Durable: schemas.ConsumerDistill,
					FilterSubjects: []string{schemas.EventSubject(schemas.KindSessionEnd, "*")}, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
					t.Fatal(err)
				}
				publish(t, js, schemas.EventSubject(schemas.KindSessionEnd, "main"), nil, `{}`)
				for i, text := range []string{"Remember that the VPN must be on before running the sync script", "Thanks, noted"} {
					e, _ := json.Marshal(schemas.TranscriptEntry{V: schemas.Version, AgentID: "main", SessionID: "s1", File: "s1.jsonl",
						Offset: int64(i * 100), Role: "user", Text: text, Timestamp: time.Now().UnixMilli()})
					publish(t, js, schemas.TranscriptSubject("main", "s1"), nil, string(e))
				}
			})

			// List: every stage, oldest first, as the headers say; a
			// letter without headers is read from its subject.
			all, err := p.DeadLetters(ctx, "")
			if err != nil || len(all) != 4 {
				t.Fatalf("list: %+v %v", all, err)
			}
			full, hand := all[0], all[1]
			if full.Stage != "capture" || full.Subject != agentEnd || full.Reason != "embed: 503 Service Unavailable" || full.Attempts != 5 ||
				!full.Time.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) || full.Worker != "host/42" || full.Stream != schemas.StreamEvents ||
				full.StreamSeq != 7 || full.Size != len(`{"kind":"agent_end","sessionKey":"s-replay"}`) {
				t.Fatalf("dead letter %+v", full)
			}
			if hand.Stage != "capture" || hand.Subject != agentEnd || hand.Attempts != 0 || hand.Time.IsZero() {
				t.Fatalf("dead letter without headers %+v", hand)
			}
			for stage, want := range map[string]int{"capture": 2, "store": 1, "nope": 0} {
				got, err := p.DeadLetters(ctx, stage)
				if n, cerr := p.CountDeadLetters(ctx, stage); err != nil || cerr != nil || len(got) != want || n != want {
					t.Errorf("stage %s: %d listed, %d counted (%v %v), want %d", stage, len(got), n, err, cerr, want)
				}
			}
			if _, err := p.DeadLetters(ctx, "a.b"); err == nil || !strings.Contains(err.Error(), "not a stage name") {
				t.Errorf("stage a.b: %v", err)
			}

			// Show: headers and body; JSON gives a JSON body as JSON and
			// anything else as a string.
			m, err := p.DeadLetter(ctx, full.Seq)
			if err != nil || m.DeadLetter != full || m.Headers.Get("Trace-Id") != "t-1" || m.DLQSubject != schemas.DLQSubjectFor("capture", agentEnd) {
				t.Fatalf("show: %+v %v", m, err)
			}
			var shown struct {
				Seq        uint64
				DLQSubject string
				Headers    map[string][]string
				Body       struct{ SessionKey string }
			}
			if b, err := json.Marshal(m); err != nil || json.Unmarshal(b, &shown) != nil || shown.Seq != full.Seq || shown.Body.SessionKey != "s-replay" ||
				shown.Headers["Trace-Id"][0] != "t-1" || shown.DLQSubject == "" {
				t.Fatalf("show as JSON: %s %v", b, err)
			}
			if m, err := p.DeadLetter(ctx, hand.Seq); err != nil || !strings.Contains(mustJSON(t, m), `"body":"{not json"`) {
				t.Fatalf("show a body that is not JSON: %s %v", mustJSON(t, m), err)
			}
			if _, err := p.DeadLetter(ctx, 999999); !errors.Is(err, client.ErrNoDeadLetter) || !strings.Contains(err.Error(), "999999") {
				t.Fatalf("show a missing sequence: %v", err)
			}

			// Replay one: not as another stage's; then to its original
			// subject, with its own headers and a Msg-Id of its own, and
			// gone from the DLQ.
			if res, err := p.Replay(ctx, "store", full.Seq); err != nil || len(res) != 1 || !strings.Contains(res[0].Error, "not from stage store") {
				t.Fatalf("replay as another stage: %+v %v", res, err)
			}
			res, err := p.Replay(ctx, "", full.Seq)
			if err != nil || len(res) != 1 || res[0].Error != "" || res[0].Subject != agentEnd || res[0].Stream != schemas.StreamEvents {
				t.Fatalf("replay: %+v %v", res, err)
			}
			if _, err := p.DeadLetter(ctx, full.Seq); !errors.Is(err, client.ErrNoDeadLetter) {
				t.Fatalf("replayed dead letter still there: %v", err)
			}
			tg.withJS(func(js jetstream.JetStream) {
				events, err := js.Stream(ctx, schemas.StreamEvents)
				if err != nil {
					t.Fatal(err)
				}
				c, err := events.GetMsg(ctx, res[0].StreamSeq)
				if err != nil || c.Subject != agentEnd || c.Header.Get("Trace-Id") != "t-1" || c.Header.Get(schemas.HeaderDLQStage) != "" ||
					!strings.HasPrefix(c.Header.Get(jetstream.MsgIDHeader), fmt.Sprintf("dlq-replay-%d-", full.Seq)) {
					t.Fatalf("replayed copy: %+v %v", c, err)
				}
			})
			if res, err := p.Replay(ctx, "", 999999); err != nil || len(res) != 1 || !strings.Contains(res[0].Error, "no dead letter with sequence 999999") {
				t.Fatalf("replay a missing sequence: %+v %v", res, err)
			}
			// Replay all of a stage.
			res, err = p.Replay(ctx, "store", 0)
			if err != nil || len(res) != 1 || res[0].Error != "" || res[0].Subject != candidates || res[0].Stream != schemas.StreamWork {
				t.Fatalf("replay every store dead letter: %+v %v", res, err)
			}
			if n, err := p.CountDeadLetters(ctx, "store"); err != nil || n != 0 {
				t.Fatalf("store dead letters after replay: %d %v", n, err)
			}
			if _, err := p.Replay(ctx, "a.b", 0); err == nil {
				t.Fatal("replay of stage a.b accepted")
			}

			// Purge one stage, then the rest.
			if n, err := p.PurgeDeadLetters(ctx, "capture"); err != nil || n != 1 {
				t.Fatalf("purge capture: %d %v", n, err)
			}
			if left, err := p.DeadLetters(ctx, ""); err != nil || len(left) != 1 || left[0].Stage != "distill" {
				t.Fatalf("after purging capture: %+v %v", left, err)
			}
			if n, err := p.PurgeDeadLetters(ctx, ""); err != nil || n != 1 {
				t.Fatalf("purge all: %d %v", n, err)
			}
			if n, err := p.CountDeadLetters(ctx, ""); err != nil || n != 0 {
				t.Fatalf("after purge: %d %v", n, err)
			}

			// Distillation: the queue, a run, the job it leaves.
			if waiting, handling, err := p.DistillQueue(ctx); err != nil || waiting != 1 || handling != 0 {
				t.Fatalf("queue: %d waiting, %d handled, %v", waiting, handling, err)
			}
			if jobs, err := p.DistillJobs(ctx, "", ""); err != nil || jobs == nil || len(jobs) != 0 {
				t.Fatalf("jobs before the run: %+v %v", jobs, err)
			}
			d, err := node.NewDistiller(loadConfig(t, t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			run := lessons.TranscriptRun{Session: "s1", IgnoreIdle: true}
			rep, err := p.Distill(ctx, d, lessons.TranscriptConfig{}, run, nil)
			if err != nil || rep.Sessions != 1 || rep.Distilled != 1 || rep.Messages != 2 || len(rep.Errors) != 0 {
				t.Fatalf("distill: %+v %v", rep, err)
			}
			if rep, err := p.Distill(ctx, d, lessons.TranscriptConfig{}, run, nil); err != nil || rep.Sessions != 0 {
				t.Fatalf("second run distilled again: %+v %v", rep, err)
			}
			jobs, err := p.DistillJobs(ctx, "main", "s1")
			if err != nil || len(jobs) != 1 || jobs[0].Trigger != "cursor" || jobs[0].Status != lessons.StatusDone || jobs[0].Stats.Messages != 2 {
				t.Fatalf("jobs: %+v %v", jobs, err)
			}
			for _, f := range [][2]string{{"other", ""}, {"", "s2"}} {
				if jobs, err := p.DistillJobs(ctx, f[0], f[1]); err != nil || len(jobs) != 0 {
					t.Errorf("jobs of %v: %+v %v", f, jobs, err)
				}
			}

			// Backups: one now, listed with its count, opened by name.
			b, err := p.BackupNow(ctx)
			if err != nil || b.Count != seededMemories || len(b.Files) != 1 || filepath.Dir(b.Files[0].Path) != tg.backups || b.Uploaded != tg.uploaded {
				t.Fatalf("backup now: %+v %v", b, err)
			}
			name := b.Files[0].Name
			list, err := p.Backups(ctx, tg.backups)
			copies := 0
			if tg.uploaded {
				copies = 1
			}
			if err != nil || list.Dir != tg.backups || len(list.Local) != 1 || list.Local[0].Name != name || list.Local[0].Count != seededMemories ||
				len(list.ObjectStore) != copies || list.ObjectStoreError != "" {
				t.Fatalf("backups: %+v %v", list, err)
			}
			if r, where, err := p.OpenBackup(ctx, name, tg.backups); err != nil || where != b.Files[0].Path || lines(t, r) != seededMemories {
				t.Fatalf("open %s: %s %v", name, where, err)
			}
			if err := os.Remove(b.Files[0].Path); err != nil {
				t.Fatal(err)
			}
			r, where, err := p.OpenBackup(ctx, name, tg.backups)
			if tg.uploaded {
				if err != nil || where != "nats:"+schemas.BucketBackups+"/"+name || lines(t, r) != seededMemories {
					t.Fatalf("open the Object Store copy: %s %v", where, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), "nor in the Object Store") {
				t.Fatalf("open a backup that is nowhere: %s %v", where, err)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lines reads r to the end, closes it and counts its lines.
func lines(t *testing.T, r io.ReadCloser) int {
	t.Helper()
	defer r.Close()
	n := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// A store another process holds: a direct backup refuses with
// engine.ErrLocked, and works once it is let go.
func TestPipelineOnALockedStore(t *testing.T) {
	cfg := loadConfig(t, t.TempDir())
	st := seedMemories(t, cfg)
	p := offline.NewPipeline(cfg)
	defer p.Close()
	ctx := context.Background()
	if _, err := p.BackupNow(ctx); !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("backup of a locked store: %v, want ErrLocked", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if res, err := p.BackupNow(ctx); err != nil || res.Count != seededMemories || res.Uploaded {
		t.Fatalf("backup after the store is let go: %+v %v", res, err)
	}
}

// A data dir clawmem never ran on has no NATS to read: the stream
// operations say so (and create nothing there), backups are still listed.
func TestPipelineWhereClawmemNeverRan(t *testing.T) {
	cfg := loadConfig(t, t.TempDir())
	p := offline.NewPipeline(cfg)
	defer p.Close()
	ctx := context.Background()
	if _, err := p.DeadLetters(ctx, ""); !errors.Is(err, client.ErrNoNATSData) {
		t.Fatalf("dead letters: %v, want ErrNoNATSData", err)
	}
	if _, err := p.DistillJobs(ctx, "", ""); !errors.Is(err, client.ErrNoNATSData) {
		t.Fatalf("distill jobs: %v, want ErrNoNATSData", err)
	}
	list, err := p.Backups(ctx, cfg.Jobs.Backup.Dir)
	if err != nil || len(list.Local) != 0 || !strings.Contains(list.ObjectStoreError, "never ran") {
		t.Fatalf("backups: %+v %v", list, err)
	}
	if _, _, err := p.OpenBackup(ctx, "memory-backup-1999-01-01.jsonl", cfg.Jobs.Backup.Dir); err == nil || !strings.Contains(err.Error(), "no Object Store here") {
		t.Fatalf("open a backup: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "nats")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the data dir got a NATS store: %v", err)
	}
}
