package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/internal/authdir"
	"github.com/clawmem/clawmem/internal/instance"
	"github.com/clawmem/clawmem/internal/natsauth"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/producers/watcher"
	"github.com/clawmem/clawmem/schemas"
)

// upProcess is a `clawmem up` of a test, with its data dir and run file.
type upProcess struct {
	cmd  *exec.Cmd
	dir  string
	info instance.RunInfo
	logs *testkit.Buffer
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// clawmemBinary builds the real binary once, without the race detector,
// so the crash test measures clawmem and not the detector's overhead.
func clawmemBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "clawmem-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "clawmem")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// startUp runs `clawmem up` in a subprocess on dir and waits for it.
func startUp(t *testing.T, dir string) *upProcess {
	t.Helper()
	in := launchUp(t, dir)
	in.awaitRunFile(t)
	return in
}

// launchUp starts `clawmem up` in a subprocess on dir, and returns at
// once.
func launchUp(t *testing.T, dir string) *upProcess {
	t.Helper()
	// The watcher follows the test's own OpenClaw state dir, never the
	// machine's ~/.openclaw; every listener takes a free port.
	cfg := fmt.Sprintf(`{"nats":{"port":-1},"ingest":{"addr":"127.0.0.1:0"},"ui":{"listen":"127.0.0.1:0"},"watch":{"stateDir":%q}}`, filepath.Join(dir, "openclaw"))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, instance.RunFile))
	logs := &testkit.Buffer{}
	cmd := exec.Command(clawmemBinary(t), "up", "--data-dir", dir)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &upProcess{cmd: cmd, dir: dir, logs: logs}
}

// awaitRunFile waits until the instance has written its run file.
func (in *upProcess) awaitRunFile(t *testing.T) {
	t.Helper()
	cmd, dir, logs := in.cmd, in.dir, in.logs
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, instance.RunFile))
		if err == nil && json.Unmarshal(b, &in.info) == nil && in.info.PID == cmd.Process.Pid {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("clawmem up did not start:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// adminConn connects to the NATS of the clawmem on dir as clawmem's own
// user (the embedded server admits nobody without credentials).
func adminConn(dir, url string) (*nats.Conn, error) {
	opt, err := natsauth.ClientOption(natsauth.AdminSeed(dir))
	if err != nil {
		return nil, err
	}
	return nats.Connect(url, opt)
}

// hook posts a hook body to the instance's ingest as a hook does: JSON,
// with the data dir's token.
func (in *upProcess) hook(client *http.Client, kind string, body []byte) (*http.Response, error) {
	token, err := authdir.Read(in.dir, authdir.IngestToken)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, in.info.IngestURL+"/v1/hooks/"+kind, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	return client.Do(req)
}

func postAgentEnd(client *http.Client, in *upProcess, i int, text string) error {
	body, _ := json.Marshal(map[string]any{
		"event": map[string]any{"success": true, "messages": []map[string]any{{"role": "user", "content": text}}},
		"ctx":   map[string]any{"agentId": "main", "sessionKey": fmt.Sprintf("session-%d", i), "runId": "run-1"},
	})
	resp, err := in.hook(client, "agent_end", body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// TestCrashSafety kills `clawmem up` with SIGKILL in the middle of ingesting
// 5,000 events, restarts it, and proves every acknowledged event became a
// memory exactly once.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real clawmem processes")
	}
	const total = 5000
	dir := t.TempDir()
	up := startUp(t, dir)
	rng := rand.New(rand.NewPCG(11, 13))
	texts := make([]string, total)
	for i := range texts {
		texts[i] = "Remember that " + testkit.Sentence(rng, i)
	}
	acked := make([]atomic.Bool, total)
	var ackCount atomic.Int64
	client := &http.Client{Timeout: 5 * time.Second}
	send := func(in *upProcess, idx []int) {
		var wg sync.WaitGroup
		work := make(chan int)
		for w := 0; w < 16; w++ {
			wg.Go(func() {
				for i := range work {
					if postAgentEnd(client, in, i, texts[i]) == nil {
						acked[i].Store(true)
						ackCount.Add(1)
					}
				}
			})
		}
		for _, i := range idx {
			work <- i
		}
		close(work)
		wg.Wait()
	}
	all := make([]int, total)
	for i := range all {
		all[i] = i
	}
	killed := make(chan struct{})
	go func() {
		for ackCount.Load() < total/2 {
			time.Sleep(5 * time.Millisecond)
		}
		up.cmd.Process.Signal(syscall.SIGKILL)
		up.cmd.Wait()
		close(killed)
	}()
	send(up, all)
	<-killed
	t.Logf("%d of %d events acknowledged before the kill", ackCount.Load(), total)

	up2 := startUp(t, dir)
	var rest []int
	for i := range acked {
		if !acked[i].Load() {
			rest = append(rest, i)
		}
	}
	send(up2, rest)
	for i := range acked {
		if !acked[i].Load() {
			t.Fatalf("event %d was never acknowledged", i)
		}
	}
	// Wait for the pipeline to drain, then stop gracefully and check the
	// store itself.
	waitStats(t, up2, total)
	up2.cmd.Process.Signal(syscall.SIGTERM)
	if err := up2.cmd.Wait(); err != nil {
		t.Fatalf("graceful stop: %v\n%s", err, up2.logs.String())
	}
	st, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "store"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seen := map[string]int{}
	err = st.Iterate(context.Background(), engine.IterateOptions{Scopes: engine.AllScopes()}, func(m schemas.Memory) error {
		seen[m.Text]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if seen[text] != 1 {
			t.Fatalf("event %d stored %d times: %q", i, seen[text], text)
		}
	}
	if len(seen) != total {
		t.Fatalf("%d memories, want %d", len(seen), total)
	}
}

// waitStats polls the store's count through the running instance's
// process: the store is locked, so it asks over the ingest-side NATS.
func waitStats(t *testing.T, in *upProcess, want int) {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		code, out, _ := runCLI(t, "stats", "--data-dir", in.dir, "--json")
		var st struct {
			Details struct {
				Total int `json:"total"`
			} `json:"details"`
		}
		if code == 0 && json.Unmarshal([]byte(out), &st) == nil && st.Details.Total >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("store has not reached %d memories: %s\n%s", want, out, in.logs.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestUpDistillsSessionFiles: `clawmem up` follows an OpenClaw session file
// into the transcript stream, a session_end hook distils it (extractive:
// no LLM is configured), the lesson is recallable, and `distill status`
// and `distill run` report on it.
func TestUpDistillsSessionFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real clawmem process")
	}
	dir := t.TempDir()
	sessions := filepath.Join(dir, "openclaw", "agents", "main", "sessions")
	if err := os.MkdirAll(sessions, 0o755); err != nil {
		t.Fatal(err)
	}
	// An agent whose OpenClaw database has a schema clawmem does not know
	// (a newer OpenClaw): reported by doctor, never fatal.
	newer := filepath.Join(dir, "openclaw", "agents", "newer", "agent")
	if err := os.MkdirAll(newer, 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(newer, watcher.OpenClawDBName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, payload BLOB)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	up := startUp(t, dir)
	lines := `{"type":"session","version":3,"id":"sess-1","timestamp":"2026-05-01T10:00:00Z","cwd":"/w"}
{"type":"message","id":"a0000001","timestamp":"2026-05-01T10:00:01Z","message":{"role":"user","content":"I prefer PostgreSQL over MySQL for every new service"}}
{"type":"message","id":"a0000002","timestamp":"2026-05-01T10:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"Noted."}]}}
`
	if err := os.WriteFile(filepath.Join(sessions, "sess-1.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	// The watcher brings the transcript to the stream; only then does the
	// session end (else the distiller would rightly fall back to the file).
	nc, err := adminConn(up.dir, up.info.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := js.Stream(context.Background(), schemas.StreamTranscripts)
		if err == nil {
			if _, err = s.GetLastMsgForSubject(context.Background(), schemas.TranscriptSubject("main", "sess-1")); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("transcript not on the stream: %v\n%s", err, up.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	body, _ := json.Marshal(map[string]any{"event": map[string]any{"sessionId": "sess-1", "reason": "idle"},
		"ctx": map[string]any{"agentId": "main", "sessionId": "sess-1"}})
	resp, err := up.hook(http.DefaultClient, "session_end", body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline = time.Now().Add(30 * time.Second)
	for {
		code, out, _ := runCLI(t, "distill", "status", "--data-dir", dir, "--json")
		var jobs []struct {
			Status, Source string
			Lessons        int
		}
		if code == 0 && json.Unmarshal([]byte(out), &jobs) == nil && len(jobs) == 1 && jobs[0].Status == "done" {
			if jobs[0].Source != "stream" || jobs[0].Lessons != 1 {
				t.Fatalf("job %s", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session not distilled: %s\n%s", out, up.logs.String())
		}
		time.Sleep(300 * time.Millisecond)
	}
	waitStats(t, up, 1)
	code, out, _ := runCLI(t, "search", "PostgreSQL MySQL", "--data-dir", dir, "--agent", "main", "--json")
	if code != 0 || !bytes.Contains([]byte(out), []byte("I prefer PostgreSQL over MySQL")) {
		t.Fatalf("lesson not recallable: %s", out)
	}
	if code, out, _ := runCLI(t, "distill", "status", "--data-dir", dir); code != 0 || !bytes.Contains([]byte(out), []byte("queued: 0")) ||
		!bytes.Contains([]byte(out), []byte("sess-1")) {
		t.Fatalf("distill status: %s", out)
	}
	code, out, _ = runCLI(t, "doctor", "--data-dir", dir)
	if code != 1 || !strings.Contains(out, "agent main: OpenClaw JSONL session files") ||
		!strings.Contains(out, "[FAIL] watcher   agent newer: OpenClaw SQLite transcripts") || !strings.Contains(out, "lacks event_json") {
		t.Fatalf("doctor does not report the transcript sources: %d\n%s", code, out)
	}
	// Nothing new since: a manual run finds nothing to do.
	code, out, _ = runCLI(t, "distill", "run", "--since", "24h", "--data-dir", dir, "--json")
	if code != 0 || !bytes.Contains([]byte(out), []byte(`"distilled": 0`)) {
		t.Fatalf("distill run: %d %s", code, out)
	}
	if code, _, errOut := runCLI(t, "distill", "run", "--data-dir", dir); code != 1 || !bytes.Contains([]byte(errOut), []byte("--session")) {
		t.Fatalf("distill run without a selection: %d %s", code, errOut)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
