package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/internal/instance"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/jobs"
)

// recordingEmbeddings is an OpenAI-compatible /v1/embeddings server that
// keeps every request body it is sent.
type recordingEmbeddings struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (r *recordingEmbeddings) serve(t *testing.T, dim int) *httptest.Server {
	local, err := embed.New(embed.Config{Provider: "local", Dimensions: dim})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, body)
		r.mu.Unlock()
		var in struct {
			Input []string `json:"input"`
			Model string   `json:"model"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		vectors := make([][]float32, len(in.Input))
		for i, text := range in.Input {
			vectors[i], _ = local.EmbedPassage(req.Context(), text)
		}
		testkit.WriteOpenAIEmbeddings(w, in.Model, vectors)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (r *recordingEmbeddings) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(bytes.Join(r.bodies, []byte("\n")))
}

// Fake credentials shaped like real ones, one per way in.
const (
	secretCapture = "sk-proj-FAKEa1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"         // said in a hook-captured turn
	secretHookPw  = "Hunter2-Fake!!"                                           // a password said in the same turn
	secretStore   = "ghp_FAKE1234567890abcdefGHIJKLmnopqrstuv"                 // memory_store
	secretUpdate  = "xoxb-123456789012-1234567890123-FAKEabcdEFGHijklMNOPqrst" // memory_update
	secretImport  = "AKIAFAKE2345ABCD6789"                                     // an imported row
	secretDistill = "glpat-FAKE_x9Yz8Wv7Ut6Sr5Q"                               // a session file, distilled
)

// TestSecretsNeverLeave runs clawmem up (embedded NATS, real store, a
// recording embedding server) and gives it a credential through each way
// in — a hook-captured turn, memory_store, memory_update, import and a
// distilled session — then looks for them everywhere a memory goes: list,
// search, the auto-recall block, export, a backup file, every request the
// embedder got, and the events and transcripts streams. The redacted
// memories must be there, each with its marker.
func TestSecretsNeverLeave(t *testing.T) {
	if testing.Short() {
		t.Skip("runs clawmem up in process")
	}
	rec := &recordingEmbeddings{}
	emb := rec.serve(t, 64)
	dir := t.TempDir()
	sessions := filepath.Join(dir, "openclaw", "agents", "main", "sessions")
	if err := os.MkdirAll(sessions, 0o755); err != nil {
		t.Fatal(err)
	}
	cfgJSON := fmt.Sprintf(`{"nats":{"port":-1},"ingest":{"addr":"127.0.0.1:0"},"ui":{"listen":"127.0.0.1:0"},
		"watch":{"enabled":true,"stateDir":%q},"distill":{"schedule":"off"},
		"embedding":{"baseURL":%q,"model":"fake-embed","apiKey":"k","dimensions":64}}`, filepath.Join(dir, "openclaw"), emb.URL+"/v1")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfgJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	logs, _ := serveInProcess(t, dir, node.RoleStore, node.RoleQuery, node.RoleCapture, node.RoleIngest, node.RoleDistill, node.RoleWatch)
	info, _ := instance.ReadRunInfo(dir)
	ctx := context.Background()

	// 1. A captured turn, through the HTTP hook ingest.
	if err := postAgentEnd(http.DefaultClient, &upProcess{dir: dir, info: info}, 1,
		"Remember: my OpenAI key is "+secretCapture+" and my db password is "+secretHookPw+" and I prefer postgres"); err != nil {
		t.Fatal(err)
	}

	// 2. memory_store and 3. memory_update, as the agent's tools call them.
	cfg, err := config.Load("", dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Target{Config: cfg, Name: "secrets-test"}.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	call := func(op string, req any) schemas.ToolResult {
		t.Helper()
		res, err := c.Call(ctx, op, "main", req)
		if err != nil || res.IsError {
			t.Fatalf("%s: %+v, %v", op, res, err)
		}
		return res
	}
	call(schemas.OpStore, schemas.StoreRequest{Text: "The release bot pushes with the GitHub token " + secretStore})
	stored := call(schemas.OpStore, schemas.StoreRequest{Text: "The team chat lives on the company Slack workspace"})
	var created struct {
		ID string `json:"id"`
	}
	b, _ := json.Marshal(stored.Details)
	if err := json.Unmarshal(b, &created); err != nil || created.ID == "" {
		t.Fatalf("store reply %s", b)
	}
	newText := "The team chat lives on the company Slack workspace; its bot token is " + secretUpdate
	call(schemas.OpUpdate, schemas.UpdateRequest{MemoryID: created.ID, Text: &newText})

	// 4. Import.
	file := filepath.Join(t.TempDir(), "import.jsonl")
	row := `{"id":"7d1f5a52-3c4b-4e8f-9a0b-1c2d3e4f5a6b","text":"The backup job signs in to AWS with access key ` + secretImport +
		`","scope":"agent:main","category":"fact","importance":0.7,"timestamp":1767225600000}` + "\n"
	if err := os.WriteFile(file, []byte(row), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "import", file, "--data-dir", dir, "--json"); code != 0 {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}

	// 5. A session file the watcher publishes and the distiller distils.
	lines := `{"type":"session","version":3,"id":"sess-s","timestamp":"2026-05-01T10:00:00Z","cwd":"/w"}
{"type":"message","id":"b0000001","timestamp":"2026-05-01T10:00:01Z","message":{"role":"user","content":"We decided the CI reads the GitLab token ` + secretDistill + ` from the vault, and I prefer that"}}
{"type":"message","id":"b0000002","timestamp":"2026-05-01T10:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"Noted."}]}}
`
	if err := os.WriteFile(filepath.Join(sessions, "sess-s.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	nc, err := adminConn(dir, info.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	waitUntil(t, 30*time.Second, func() error {
		s, err := js.Stream(ctx, schemas.StreamTranscripts)
		if err != nil {
			return err
		}
		_, err = s.GetLastMsgForSubject(ctx, schemas.TranscriptSubject("main", "sess-s"))
		return err
	})
	body, _ := json.Marshal(map[string]any{"event": map[string]any{"sessionId": "sess-s", "reason": "idle"},
		"ctx": map[string]any{"agentId": "main", "sessionId": "sess-s"}})
	resp, err := (&upProcess{dir: dir, info: info}).hook(http.DefaultClient, "session_end", body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("session_end: %s", resp.Status)
	}

	// Every way in has become a memory, with its marker.
	markers := []string{"[REDACTED:openai-key]", "[REDACTED:password]", "[REDACTED:github-token]", "[REDACTED:slack-token]",
		"[REDACTED:aws-access-key]", "[REDACTED:gitlab-token]"}
	var listed string
	waitUntil(t, 60*time.Second, func() error {
		code, out, errOut := runCLI(t, "list", "--data-dir", dir, "--limit", "100", "--history", "--json")
		if code != 0 {
			return fmt.Errorf("list: %s", errOut)
		}
		listed = out
		for _, m := range markers {
			if !strings.Contains(out, m) {
				return fmt.Errorf("no memory holds %s yet:\n%s\n%s", m, out, logs.String())
			}
		}
		return nil
	})

	secrets := []string{secretCapture, secretHookPw, secretStore, secretUpdate, secretImport, secretDistill}
	where := map[string]string{"list": listed, "embedder requests": rec.all()}
	_, where["search"], _ = runCLI(t, "search", "postgres OpenAI GitHub Slack AWS GitLab token key password", "--data-dir", dir, "--agent", "main", "--json")
	ctxRes := call(schemas.OpContext, schemas.ContextRequest{Prompt: "Which token does the release bot push with, and what is my OpenAI key?"})
	cb, _ := json.Marshal(ctxRes)
	where["auto-recall"] = string(cb)
	if !strings.Contains(where["auto-recall"], "relevant-memories") {
		t.Errorf("auto-recall gave no block: %s", cb)
	}
	_, where["export"], _ = runCLI(t, "export", "--data-dir", dir)
	code, out, errOut := runCLI(t, "backup", "now", "--data-dir", dir, "--json")
	var backup jobs.BackupResult
	if code != 0 || json.Unmarshal([]byte(out), &backup) != nil || len(backup.Files) == 0 {
		t.Fatalf("backup now: %d %s %s", code, out, errOut)
	}
	bf, err := os.ReadFile(backup.Files[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	where["backup file"] = string(bf)
	for _, stream := range []string{schemas.StreamEvents, schemas.StreamTranscripts} {
		where[stream+" stream"] = streamContents(t, js, stream)
	}
	for name, text := range where {
		if text == "" {
			t.Errorf("%s: nothing to look in", name)
		}
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the secret %q", name, s)
			}
		}
	}
	for _, m := range []string{"[REDACTED:openai-key]", "[REDACTED:github-token]"} {
		if !strings.Contains(where["export"], m) || !strings.Contains(where["backup file"], m) {
			t.Errorf("export or backup lacks %s", m)
		}
	}
	if !strings.Contains(where[schemas.StreamEvents+" stream"], "[REDACTED:openai-key]") {
		t.Errorf("the captured turn is not on the events stream, redacted")
	}
}

// streamContents is every message of a stream, joined.
func streamContents(t *testing.T, js jetstream.JetStream, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted
		}
		b.Write(m.Data)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestSecretsRefuseAnswersTheTool: with secrets.mode refuse, memory_store
// answers with an input error that names the kind of secret and the mode,
// never the secret, and stores nothing.
func TestSecretsRefuseAnswersTheTool(t *testing.T) {
	if testing.Short() {
		t.Skip("runs clawmem up in process")
	}
	dir := t.TempDir()
	writeConfig(t, dir, `,"secrets":{"mode":"refuse"}`)
	serveInProcess(t, dir, node.RoleStore, node.RoleQuery)
	cfg, err := config.Load("", dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := client.Target{Config: cfg, Name: "secrets-test"}.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Call(ctx, schemas.OpStore, "main", schemas.StoreRequest{Text: "The release bot pushes with the GitHub token " + secretStore})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if !res.IsError || !strings.Contains(string(b), "the text holds a secret (github-token); not stored — secrets.mode is refuse") ||
		!strings.Contains(string(b), `"code":"invalid"`) || strings.Contains(string(b), secretStore) {
		t.Fatalf("store in refuse mode answered %s", b)
	}
	if code, out, _ := runCLI(t, "list", "--data-dir", dir, "--json"); code != 0 || strings.Contains(out, "release bot") {
		t.Fatalf("list after a refused store: %d %s", code, out)
	}
}
