package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/query"
)

const portDims = 384 // the default config's local embedder

var portSyllables = strings.Fields("ka lo mi ne ru ta shi po va de gi zu fe ho ja ki le mo nu pa ri so tu ve wa xo yi ze bra cle dro fli gro")

// portText is the i-th text of a corpus whose texts share almost no words,
// so that no two are near-duplicates.
func portText(rng *rand.Rand, i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "note %d:", i)
	for range 10 {
		b.WriteByte(' ')
		for range 2 + rng.IntN(3) {
			b.WriteString(portSyllables[rng.IntN(len(portSyllables))])
		}
	}
	return b.String()
}

func portEmbedder(t testing.TB, dims int) embed.Embedder {
	return testkit.LocalEmbedder(t, dims)
}

// portFill writes n memories over five scopes straight into the store of
// data dir dir, with every field varied, and returns them by id.
func portFill(t testing.TB, dir string, n int) map[string]schemas.Memory {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "store"), sqlitestore.Options{Dimensions: portDims})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	emb := portEmbedder(t, portDims)
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	scopeNames := []string{"global", "agent:main", "agent:ops", "custom:work", "project:clawmem"}
	out := make(map[string]schemas.Memory, n)
	// Recent enough that time decay leaves them findable (SPEC §1).
	now := time.Now().UnixMilli()
	for start := 0; start < n; start += 2000 {
		batch := make([]schemas.Memory, 0, 2000)
		texts := make([]string, 0, 2000)
		for i := start; i < min(start+2000, n); i++ {
			m := schemas.Memory{ID: uuid.NewString(), Text: portText(rng, i), Category: schemas.Categories[rng.IntN(len(schemas.Categories))],
				Scope: scopeNames[i%len(scopeNames)], Importance: math.Round(rng.Float64()*100) / 100,
				Timestamp: now - rng.Int64N(30*24*3600*1000), Metadata: json.RawMessage(fmt.Sprintf(`{"n":%d,"tag":"t%d"}`, i, i%7))}
			batch = append(batch, m)
			texts = append(texts, m.Text)
		}
		vecs, err := emb.EmbedPassages(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range batch {
			batch[i].Vector = vecs[i]
		}
		if err := st.Import(ctx, batch...); err != nil {
			t.Fatal(err)
		}
		for _, m := range batch {
			m.Vector = nil
			out[m.ID] = m
		}
	}
	return out
}

// portAll reads every memory of a data dir's store, with vectors.
func portAll(t testing.TB, storeDir string) map[string]schemas.Memory {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), storeDir, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[string]schemas.Memory{}
	if err := st.Iterate(context.Background(), engine.IterateOptions{Scopes: engine.AllScopes(), WithVectors: true}, func(m schemas.Memory) error {
		out[m.ID] = m
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func portSame(t testing.TB, want, got map[string]schemas.Memory) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d memories, want %d", len(got), len(want))
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Fatalf("memory %s is missing", id)
		}
		if g.Text != w.Text || g.Scope != w.Scope || g.Category != w.Category || g.Importance != w.Importance ||
			g.Timestamp != w.Timestamp || string(g.Metadata) != string(w.Metadata) {
			t.Fatalf("memory %s:\n got  %+v\n want %+v", id, g, w)
		}
	}
}

// portSize scales an acceptance test's size down tenfold under -short and
// under the race detector, which makes SQLite and the embedder ten times
// slower; plain `go test` runs the full size.
func portSize(n int) int {
	if testing.Short() || raceBuild() {
		return n / 10
	}
	return n
}

func raceBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

func portCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("clawmem %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// portImportReport runs an import with --json and decodes its report.
type portImportReport struct {
	portable.Report
	Source string `json:"source"`
	Note   string `json:"note"`
	Error  string `json:"error"`
}

func portImport(t *testing.T, wantCode int, args ...string) portImportReport {
	t.Helper()
	code, out, errOut := runCLI(t, append(args, "--json")...)
	var rep portImportReport
	if code != wantCode || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("clawmem %s: exit %d (want %d)\n%s%s", strings.Join(args, " "), code, wantCode, out, errOut)
	}
	return rep
}

// TestExportImportRoundTrip: 10,000 memories over 5 scopes go out as JSONL
// and into an empty store unchanged; with their vectors they go in without
// a single embedding call and answer 50 searches exactly as the original.
func TestExportImportRoundTrip(t *testing.T) {
	n := portSize(10000)
	src := t.TempDir()
	want := portFill(t, src, n)
	file := filepath.Join(t.TempDir(), "memories.jsonl")
	if out := portCLI(t, "export", "--data-dir", src, "--output", file); !strings.Contains(out, fmt.Sprintf("exported %d memories", n)) {
		t.Fatalf("export said %q", out)
	}
	lines := portLines(t, file)
	if len(lines) != n || strings.Contains(lines[0], `"vector"`) {
		t.Fatalf("%d lines; first %s", len(lines), lines[0])
	}

	dst := t.TempDir()
	rep := portImport(t, 0, "import", file, "--data-dir", dst)
	if rep.Imported != n || rep.Skipped != 0 || rep.Failed != 0 {
		t.Fatalf("import: %+v", rep.Report)
	}
	portSame(t, want, portAll(t, filepath.Join(dst, "store")))

	// With vectors, into a store whose embedder cannot be reached: any
	// embedding call would fail the import.
	vfile := filepath.Join(t.TempDir(), "memories-vectors.jsonl")
	portCLI(t, "export", "--data-dir", src, "--output", vfile, "--with-vectors")
	vdst := t.TempDir()
	cfg := `{"embedding":{"provider":"openai","baseURL":"http://127.0.0.1:1/v1","model":"unreachable","dimensions":384}}`
	if err := os.WriteFile(filepath.Join(vdst, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	rep = portImport(t, 0, "import", vfile, "--data-dir", vdst)
	if rep.Imported != n {
		t.Fatalf("import with vectors: %+v", rep.Report)
	}
	orig, copied := portAll(t, filepath.Join(src, "store")), portAll(t, filepath.Join(vdst, "store"))
	portSame(t, want, copied)
	for id, m := range orig {
		if !slicesEqual(m.Vector, copied[id].Vector) {
			t.Fatalf("memory %s: the vector changed", id)
		}
	}
	a, closeA := portEngine(t, filepath.Join(src, "store"))
	b, closeB := portEngine(t, filepath.Join(vdst, "store"))
	rng := rand.New(rand.NewPCG(9, 9))
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	answered := 0
	for q := range 50 {
		words := strings.Fields(want[ids[rng.IntN(len(ids))]].Text)[2:]
		query := strings.Join(words[:4+rng.IntN(len(words)-4)], " ")
		ra, err := a.Recall(context.Background(), memory.Admin(), query, memory.RecallOptions{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.Recall(context.Background(), memory.Admin(), query, memory.RecallOptions{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(ra.Candidates) != len(rb.Candidates) {
			t.Fatalf("query %d %q: %d vs %d results", q, query, len(ra.Candidates), len(rb.Candidates))
		}
		if len(ra.Candidates) > 0 {
			answered++
		}
		for i := range ra.Candidates {
			ca, cb := ra.Candidates[i], rb.Candidates[i]
			// Scores carry recency, which moves with the clock between the two calls.
			if ca.Memory.ID != cb.Memory.ID || math.Abs(ca.Score-cb.Score) > 1e-6 {
				t.Fatalf("query %d %q, result %d: %s %.6f vs %s %.6f", q, query, i, ca.Memory.ID, ca.Score, cb.Memory.ID, cb.Score)
			}
		}
	}

	closeA()
	closeB()
	if answered < 50 {
		t.Fatalf("only %d of 50 queries found anything", answered)
	}

	// The JSON document goes back in just as well.
	jfile := filepath.Join(t.TempDir(), "memories.json")
	portCLI(t, "export", "--data-dir", src, "--output", jfile, "--format", "json", "--scope", "custom:work")
	jdst := t.TempDir()
	rep = portImport(t, 0, "import", jfile, "--data-dir", jdst)
	if rep.Imported != n/5 || !strings.Contains(rep.Source, "JSON export document") || rep.Note != "" {
		t.Fatalf("document import: %+v", rep)
	}
}

func slicesEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// portEngine opens a store with the local embedder and default retrieval.
func portEngine(t *testing.T, dir string) (*memory.Engine, func()) {
	t.Helper()
	return testkit.Engine(t, dir, portEmbedder(t, portDims))
}

func portLines(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// TestImportPluginFixtures: memory-lancedb-pro's export document and
// memory-lancedb's rows come in with their scopes and dates.
func TestImportPluginFixtures(t *testing.T) {
	dir := t.TempDir()
	fixtures := filepath.Join("..", "..", "engine", "portable", "testdata")
	rep := portImport(t, 0, "import", filepath.Join(fixtures, "memory-lancedb-pro-export.json"), "--data-dir", dir)
	if rep.Imported != 5 || !strings.Contains(rep.Source, "JSON export document") {
		t.Fatalf("pro export: %+v", rep)
	}
	rep = portImport(t, 0, "import", filepath.Join(fixtures, "memory-lancedb-rows.jsonl"), "--data-dir", dir)
	if rep.Imported != 4 {
		t.Fatalf("lancedb rows: %+v", rep)
	}
	got := portAll(t, filepath.Join(dir, "store"))
	checks := map[string]struct {
		scope string
		ts    int64
		cat   schemas.Category
		imp   float64
	}{
		"5b0a1c1e-3f57-4f0e-8f4a-0d8c6f1b2a02": {"agent:main", 1730100000000, "fact", 0.7},
		"5b0a1c1e-3f57-4f0e-8f4a-0d8c6f1b2a03": {"project:billing", 1730200000000, "decision", 0.9},
		"5b0a1c1e-3f57-4f0e-8f4a-0d8c6f1b2a04": {"custom:work", 1730300000000, "entity", 0.6},
		"9c7e2a10-1b2c-4d3e-8f40-5a6b7c8d9e03": {"global", time.Date(2024, 7, 3, 9, 30, 0, 0, time.UTC).UnixMilli(), "decision", 0.7},
		"9c7e2a10-1b2c-4d3e-8f40-5a6b7c8d9e04": {"global", 1720000000000, "fact", 0.7},
	}
	for id, c := range checks {
		m := got[id]
		if m.Scope != c.scope || m.Timestamp != c.ts || m.Category != c.cat || m.Importance != c.imp || len(m.Vector) != portDims {
			t.Errorf("%s stored as %+v", id, m)
		}
	}
	// The same rows under --scope go nowhere new: the ids exist.
	rep = portImport(t, 0, "import", filepath.Join(fixtures, "memory-lancedb-rows.json"), "--data-dir", dir, "--scope", "agent:main", "--skip-existing")
	if rep.Exists != 4 || len(rep.Skips) != 0 {
		t.Fatalf("re-import: %+v", rep)
	}
}

// TestImportBadRows: unusable rows are failures with their line numbers;
// every other row goes in.
func TestImportBadRows(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "mixed.jsonl")
	rows := []string{
		`{"text":"The build server is called hephaestus","scope":"custom:infra"}`,
		`{"text":"unterminated`,
		`{"text":42}`,
		"{\"text\":\"caf\xe9 au lait\"}",
		`{"text":"` + strings.Repeat("long ", schemas.MaxTextBytes/5+1) + `"}`,
		`{"text":"fine text, bad scope","scope":"has spaces"}`,
		`{"text":"fine text, unknown scope kind","scope":"team:x"}`,
		``,
		`{"text":"Deploys happen on Tuesdays after the standup","createdAt":"2024-01-02"}`,
	}
	if err := os.WriteFile(file, []byte(strings.Join(rows, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := portImport(t, 1, "import", file, "--data-dir", dir)
	if rep.Imported != 2 || rep.Failed != 6 {
		t.Fatalf("report %+v", rep.Report)
	}
	wantLines := []int{2, 3, 4, 5, 6, 7}
	wantReasons := []string{"malformed JSON", `field "text" must be a string`, "not valid UTF-8", "max 65536", `scope "has spaces"`, "scopes.definitions"}
	for i, f := range rep.Failures {
		if f.Line != wantLines[i] || !strings.Contains(f.Reason, wantReasons[i]) {
			t.Errorf("failure %d: %+v, want line %d with %q", i, f, wantLines[i], wantReasons[i])
		}
	}
	code, out, _ := runCLI(t, "import", file, "--data-dir", t.TempDir())
	if code != 1 || !strings.Contains(out, "imported 2 of 8 rows") || !strings.Contains(out, "line 4: failed: the row is not valid UTF-8") {
		t.Fatalf("text report (%d):\n%s", code, out)
	}
	code, out, _ = runCLI(t, "import", file, "--data-dir", t.TempDir(), "--dry-run")
	if code != 1 || !strings.Contains(out, "would import 2 of 8 rows") {
		t.Fatalf("dry run (%d):\n%s", code, out)
	}
	if code, _, errOut := runCLI(t, "import", filepath.Join(dir, "nope.jsonl"), "--data-dir", dir); code != 1 || !strings.Contains(errOut, "no such file") {
		t.Fatalf("missing file: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "import", file, "--data-dir", dir, "--scope", "a b"); code != 1 || !strings.Contains(errOut, "scope") {
		t.Fatalf("bad --scope: %d %s", code, errOut)
	}
	if code, out, errOut := runCLI(t, "import", file, "--data-dir", dir, "--scope", "team:x"); code != 1 || !strings.Contains(errOut, "scopes.definitions") || strings.Contains(out, "line") {
		t.Fatalf("undefined --scope: %d %s %s", code, out, errOut)
	}
}

// cancelAfter is a row source that ends its context after n rows, as a
// kill would in the middle of an import.
type cancelAfter struct {
	client.Source
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Rows(ctx context.Context, fn func(portable.Record) error) error {
	seen := 0
	return c.Source.Rows(ctx, func(r portable.Record) error {
		if seen++; seen == c.n {
			c.cancel()
		}
		return fn(r)
	})
}

// TestImportResumes: an import cut off halfway, rerun with --skip-existing,
// ends with every memory stored exactly once.
func TestImportResumes(t *testing.T) {
	n := portSize(3000)
	src := t.TempDir()
	want := portFill(t, src, n)
	file := filepath.Join(t.TempDir(), "memories.jsonl")
	portCLI(t, "export", "--data-dir", src, "--output", file)

	dst := t.TempDir()
	cfg, err := config.Load("", dst)
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := client.OpenLocalBulk(context.Background(), cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := client.OpenFileSource(file, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rep, err := client.Import(ctx, tgt, &cancelAfter{Source: fs, n: n * 17 / 30, cancel: cancel}, client.ImportJob{BatchSize: n / 6})
	fs.Close()
	tgt.Close()
	if err == nil || rep.Imported == 0 || rep.Imported >= n {
		t.Fatalf("the cut-off import: %v, %+v", err, rep)
	}
	first := len(portAll(t, filepath.Join(dst, "store")))
	t.Logf("%d memories stored before the cut", first)

	again := portImport(t, 0, "import", file, "--data-dir", dst, "--skip-existing")
	if again.Exists != first || again.Imported != n-first || len(again.Skips) != 0 {
		t.Fatalf("resumed import: %+v (first run stored %d)", again.Report, first)
	}
	portSame(t, want, portAll(t, filepath.Join(dst, "store")))
}

// TestImportSurvivesSIGKILL kills the real binary in the middle of an
// import and resumes it.
func TestImportSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	n := portSize(20000)
	src := t.TempDir()
	want := portFill(t, src, n)
	file := filepath.Join(t.TempDir(), "memories.jsonl")
	portCLI(t, "export", "--data-dir", src, "--output", file)

	dst := t.TempDir()
	cmd := exec.Command(clawmemBinary(t), "import", file, "--data-dir", dst, "--batch-size", fmt.Sprint(n/40))
	logs := &testkit.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	wal := filepath.Join(dst, "store", sqlitestore.FileName+"-wal")
	deadline := time.Now().Add(60 * time.Second)
	killed := false
wait:
	for {
		select {
		case <-exited:
			break wait
		default:
		}
		if fi, err := os.Stat(wal); err == nil && fi.Size() > int64(n)*200 {
			cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			killed = true
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("import made no progress:\n%s", logs.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	first := len(portAll(t, filepath.Join(dst, "store")))
	t.Logf("killed=%v with %d of %d memories stored", killed, first, n)
	if killed && (first == 0 || first == n) {
		t.Logf("the kill did not land mid-import")
	}
	again := portImport(t, 0, "import", file, "--data-dir", dst, "--skip-existing")
	if again.Exists != first || again.Imported != n-first {
		t.Fatalf("resumed import: %+v (%d stored before)", again.Report, first)
	}
	portSame(t, want, portAll(t, filepath.Join(dst, "store")))
}

// TestBulkOverNATS: with a clawmem running, export and import go through
// its admin endpoints, and delete-bulk and delete through its query service.
func TestBulkOverNATS(t *testing.T) {
	src := t.TempDir()
	want := portFill(t, src, 1500)
	srv, nc, _ := natsembed.StartTest(t)
	eng, st := openDirEngine(t, src)
	defer st.Close()
	svc := query.New(nc, eng, query.DefaultConfig(), nil, slog.New(slog.DiscardHandler))
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	url := srv.ClientURL()
	other := t.TempDir() // only its (default) config is read

	// The store is held by the running service; --db says so.
	code, _, errOut := runCLI(t, "export", "--db", filepath.Join(src, "store"))
	if code != 1 || !strings.Contains(errOut, "stop it, or let this command go through it") {
		t.Fatalf("export of a held store: %d %s", code, errOut)
	}

	file := filepath.Join(t.TempDir(), "out.jsonl")
	portCLI(t, "export", "--nats-url", url, "--data-dir", other, "--output", file, "--with-vectors")
	if lines := portLines(t, file); len(lines) != 1500 || !strings.Contains(lines[0], `"vector":[`) {
		t.Fatalf("%d lines over NATS", len(lines))
	}
	// Into the same running store: every id exists.
	rep := portImport(t, 0, "import", file, "--nats-url", url, "--data-dir", other, "--skip-existing")
	if rep.Exists != 1500 || rep.Imported != 0 {
		t.Fatalf("re-import over NATS: %+v", rep.Report)
	}
	// Gone and back: delete one scope over NATS, import it again.
	out := portCLI(t, "delete-bulk", "--scope", "agent:ops", "--nats-url", url, "--data-dir", other)
	if !strings.Contains(out, "Deleted 300 memories in agent:ops") {
		t.Fatalf("delete-bulk: %s", out)
	}
	rep = portImport(t, 0, "import", file, "--nats-url", url, "--data-dir", other, "--skip-existing", "--batch-size", "200")
	if rep.Imported != 300 || rep.Exists != 1200 || rep.Failed != 0 {
		t.Fatalf("import over NATS: %+v", rep.Report)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte("{\"text\":\"Fresh memory about the kanban board\"}\nnot json\n"), 0o600)
	rep = portImport(t, 1, "import", bad, "--nats-url", url, "--data-dir", other)
	if rep.Imported != 1 || rep.Failed != 1 || rep.Failures[0].Line != 2 {
		t.Fatalf("bad rows over NATS: %+v", rep.Report)
	}
	if code, _, errOut := runCLI(t, "import", bad, "--nats-url", url, "--data-dir", other, "--scope", "team:x"); code != 1 || !strings.Contains(errOut, "scopes.definitions") {
		t.Fatalf("undefined --scope over NATS: %d %s", code, errOut)
	}
	var id string
	for k := range want {
		id = k
		break
	}
	if out := portCLI(t, "delete", id[:8], "--nats-url", url, "--data-dir", other); !strings.Contains(out, "forgotten") {
		t.Fatalf("delete: %s", out)
	}
	stats, err := st.Stats(context.Background(), engine.AllScopes())
	if err != nil || stats.Total != 1500 {
		t.Fatalf("stats %+v %v", stats, err)
	}
}

func TestDeleteBulkDirect(t *testing.T) {
	dir := t.TempDir()
	portFill(t, dir, 50)
	if code, _, errOut := runCLI(t, "delete-bulk", "--data-dir", dir); code != 1 || !strings.Contains(errOut, "never deletes everything") {
		t.Fatalf("no filter: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "delete-bulk", "--data-dir", dir, "--before", "soon"); code != 1 || !strings.Contains(errOut, "--before") {
		t.Fatalf("bad date: %d %s", code, errOut)
	}
	out := portCLI(t, "delete-bulk", "--data-dir", dir, "--scope", "global", "--dry-run")
	if !strings.Contains(out, "Would delete 10 memories in global") {
		t.Fatalf("dry run: %s", out)
	}
	out = portCLI(t, "delete-bulk", "--data-dir", dir, "--before", "2100-01-01", "--scope", "custom:work", "--json")
	var res struct {
		Details schemas.DeleteBulkDetails
	}
	if json.Unmarshal([]byte(out), &res) != nil || res.Details.Count != 10 {
		t.Fatalf("delete: %s", out)
	}
	if got := len(portAll(t, filepath.Join(dir, "store"))); got != 40 {
		t.Fatalf("%d left, want 40", got)
	}
}

// TestReembed copies a store into one with another model (dimensions),
// keeping everything but the vectors, refuses to work in place without
// --force, and resumes with --skip-existing.
func TestReembed(t *testing.T) {
	src := t.TempDir()
	want := portFill(t, src, 300)
	dst := t.TempDir()
	if err := os.WriteFile(filepath.Join(dst, "config.json"), []byte(`{"embedding":{"provider":"local","dimensions":128}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := portImport(t, 0, "reembed", "--source-db", filepath.Join(src, "store"), "--data-dir", dst)
	if rep.Imported != 300 || !strings.Contains(rep.Source, "384 dimensions") {
		t.Fatalf("reembed: %+v", rep)
	}
	got := portAll(t, filepath.Join(dst, "store"))
	portSame(t, want, got)
	for _, m := range got {
		if len(m.Vector) != 128 {
			t.Fatalf("vector of %d dimensions", len(m.Vector))
		}
	}
	rep = portImport(t, 0, "reembed", "--source-db", filepath.Join(src, "store", sqlitestore.FileName), "--data-dir", dst, "--skip-existing")
	if rep.Exists != 300 || rep.Imported != 0 {
		t.Fatalf("resumed reembed: %+v", rep)
	}

	code, _, errOut := runCLI(t, "reembed", "--source-db", filepath.Join(src, "store"), "--data-dir", src)
	if code != 1 || !strings.Contains(errOut, "--force") {
		t.Fatalf("in place without --force: %d %s", code, errOut)
	}
	before := portAll(t, filepath.Join(src, "store"))
	out := portCLI(t, "reembed", "--source-db", filepath.Join(src, "store"), "--data-dir", src, "--force")
	if !strings.Contains(out, "re-embedded 300 of 300 memories in place") {
		t.Fatalf("in place: %s", out)
	}
	after := portAll(t, filepath.Join(src, "store"))
	portSame(t, want, after)
	for id := range before {
		if !slicesEqual(before[id].Vector, after[id].Vector) {
			t.Fatalf("the same model gave %s another vector", id)
		}
	}
	if code, _, errOut := runCLI(t, "reembed", "--source-db", filepath.Join(t.TempDir(), "nothing"), "--data-dir", dst); code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("missing source: %d %s", code, errOut)
	}
}

// TestMigrate: check, run and verify over an export file and a clawmem
// store; a LanceDB directory in a build without the lancedb tag says what
// to do instead.
func TestMigrate(t *testing.T) {
	dir := t.TempDir()
	fixture, _ := filepath.Abs(filepath.Join("..", "..", "engine", "portable", "testdata", "memory-lancedb-pro-export.json"))
	out := portCLI(t, "migrate", "check", "--source", fixture, "--data-dir", dir)
	if !strings.Contains(out, "JSON export document, 5 memories: ready") {
		t.Fatalf("check: %s", out)
	}
	// verify only reads: before any run there is no store to look in, and
	// it makes none.
	code, _, errOut := runCLI(t, "migrate", "verify", "--source", fixture, "--data-dir", dir)
	if code != 1 || !strings.Contains(errOut, "no clawmem store at "+filepath.Join(dir, "store")) {
		t.Fatalf("verify before run: %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "store")); !os.IsNotExist(err) {
		t.Fatalf("verify made a store (%v)", err)
	}
	rep := portImport(t, 0, "migrate", "run", "--source", fixture, "--data-dir", dir, "--dry-run")
	if rep.Imported != 5 || len(portAll(t, filepath.Join(dir, "store"))) != 0 {
		t.Fatalf("dry run: %+v", rep)
	}
	rep = portImport(t, 0, "migrate", "run", "--source", fixture, "--data-dir", dir)
	if rep.Imported != 5 {
		t.Fatalf("run: %+v", rep)
	}
	if out := portCLI(t, "migrate", "verify", "--source", fixture, "--data-dir", dir); !strings.Contains(out, "5 present") {
		t.Fatalf("verify: %s", out)
	}

	// A clawmem store as the source, vectors and all.
	old := t.TempDir()
	want := portFill(t, old, 40)
	rep = portImport(t, 0, "migrate", "run", "--source", filepath.Join(old, "store"), "--data-dir", dir)
	if rep.Imported != 40 {
		t.Fatalf("run from a store: %+v", rep)
	}
	if out := portCLI(t, "migrate", "verify", "--source", filepath.Join(old, "store"), "--data-dir", dir); !strings.Contains(out, "40 present") {
		t.Fatalf("verify store: %s", out)
	}
	got := portAll(t, filepath.Join(dir, "store"))
	for id := range want {
		if _, ok := got[id]; !ok {
			t.Fatalf("%s not migrated", id)
		}
	}

	lance := filepath.Join(t.TempDir(), "lancedb")
	if err := os.MkdirAll(filepath.Join(lance, "memories.lance"), 0o755); err != nil {
		t.Fatal(err)
	}
	out = portCLI(t, "migrate", "check", "--source", lance, "--data-dir", dir)
	if !strings.Contains(out, "LanceDB database") || !strings.Contains(out, "-tags lancedb") || !strings.Contains(out, "clawmem import") {
		t.Fatalf("check LanceDB: %s", out)
	}
	code, _, errOut = runCLI(t, "migrate", "run", "--source", lance, "--data-dir", dir)
	if code != 1 || !strings.Contains(errOut, "-tags lancedb") {
		t.Fatalf("run LanceDB: %d %s", code, errOut)
	}

	// With no source and no plugin data: nothing to do.
	home := t.TempDir()
	t.Setenv("HOME", home)
	if out := portCLI(t, "migrate", "check", "--data-dir", dir); !strings.Contains(out, "nothing to migrate") || !strings.Contains(out, filepath.Join(home, ".openclaw", "memory", "lancedb")) {
		t.Fatalf("check without sources: %s", out)
	}
}

// History goes out and comes back: an export row keeps supersededBy,
// validFrom and invalidatedAt; an import with a broken chain (a successor
// nowhere, a cycle) fails those rows alone; list, --history and show tell
// current facts from history.
func TestImportHistoryAndShow(t *testing.T) {
	dir := t.TempDir()
	const (
		berlin = "b0000000-0000-4000-8000-000000000001"
		paris  = "b0000000-0000-4000-8000-000000000002"
		x, y   = "b0000000-0000-4000-8000-00000000000a", "b0000000-0000-4000-8000-00000000000b"
	)
	file := filepath.Join(dir, "history.jsonl")
	rows := []string{
		`{"id":"` + paris + `","text":"I live in Paris","scope":"global","timestamp":1700000000000,"supersededBy":"` + berlin + `","validFrom":1600000000000,"invalidatedAt":1710000000000}`,
		`{"id":"` + berlin + `","text":"I moved to Berlin","scope":"global","timestamp":1710000000000}`,
		`{"id":"b0000000-0000-4000-8000-000000000003","text":"I worked at Siemens","scope":"global","timestamp":1700000000000,"supersededBy":"b0000000-0000-4000-8000-0000000000ff","invalidatedAt":1710000000000}`,
		`{"id":"` + x + `","text":"The office is in Brno","scope":"global","timestamp":1700000000000,"supersededBy":"` + y + `","invalidatedAt":1710000000000}`,
		`{"id":"` + y + `","text":"The office is in Prague","scope":"global","timestamp":1700000000000,"supersededBy":"` + x + `","invalidatedAt":1710000000000}`,
		`{"id":"b0000000-0000-4000-8000-000000000004","text":"I lived in Lyon","scope":"global","supersededBy":"` + paris + `"}`,
	}
	if err := os.WriteFile(file, []byte(strings.Join(rows, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "store")
	rep := portImport(t, 1, "import", file, "--data-dir", dir, "--db", db)
	if rep.Imported != 2 || rep.Failed != 4 {
		t.Fatalf("report %+v", rep.Report)
	}
	want := map[int]string{3: "missing link", 4: "cycle", 5: "cycle", 6: "invalidatedAt is not"}
	for _, f := range rep.Failures {
		if !strings.Contains(f.Reason, want[f.Line]) || want[f.Line] == "" {
			t.Errorf("failure %+v, want line %d to say %q", f, f.Line, want[f.Line])
		}
	}
	code, out, _ := runCLI(t, "list", "--data-dir", dir, "--db", db)
	if code != 0 || !strings.Contains(out, "I moved to Berlin") || strings.Contains(out, "Paris") {
		t.Fatalf("list (%d):\n%s", code, out)
	}
	code, out, _ = runCLI(t, "list", "--history", "--data-dir", dir, "--db", db)
	if code != 0 || !strings.Contains(out, "I live in Paris (2023-11-14; superseded by b0000000 on 2024-03-09)") {
		t.Fatalf("list --history (%d):\n%s", code, out)
	}
	code, out, _ = runCLI(t, "show", berlin, "--data-dir", dir, "--db", db)
	if code != 0 || !strings.Contains(out, "I moved to Berlin") || !strings.Contains(out, "\nreplaced ["+paris[:8]+"]") {
		t.Fatalf("show (%d):\n%s", code, out)
	}
	code, out, _ = runCLI(t, "export", "--data-dir", dir, "--db", db)
	if code != 0 || !strings.Contains(out, `"supersededBy":"`+berlin+`","validFrom":1600000000000,"invalidatedAt":1710000000000`) ||
		strings.Count(strings.TrimSpace(out), "\n") != 1 {
		t.Fatalf("export (%d), want the current memory and its history:\n%s", code, out)
	}
}

func TestConsolidateCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "store")
	// --db names a store: the data dir's, made by a command without --db.
	if code, _, errOut := runCLI(t, "stats", "--data-dir", dir); code != 0 {
		t.Fatalf("stats: %s", errOut)
	}
	code, out, errOut := runCLI(t, "consolidate", "--dry-run", "--data-dir", dir, "--db", db)
	if code != 0 || !strings.Contains(out, "Consolidation over 0 memories: would merge 0 group(s), archived 0. (dry run: nothing changed)") {
		t.Fatalf("consolidate (%d): %s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "consolidate", "--merge-min", "7", "--data-dir", dir, "--db", db); code != 1 || !strings.Contains(errOut, "mergeMin") {
		t.Fatalf("bad merge-min (%d): %s", code, errOut)
	}
}
