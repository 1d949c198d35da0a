package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/eval"
)

func TestEvalCommand(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "eval", "../../eval/testdata/mini.json", "--data-dir", dir, "--json", "--explain-misses", "3")
	if code != 0 {
		t.Fatalf("eval: %s %s", out, errOut)
	}
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Conversations != 1 || rep.Memories != 9 || rep.Overall.Questions != 5 || rep.Context.NoneQuestions != 1 ||
		len(rep.ByCategory) != 4 || rep.LatencyP50 <= 0 {
		t.Fatalf("report %+v", rep)
	}
	code, out, _ = runCLI(t, "eval", "../../eval/testdata/mini.json", "--data-dir", dir, "--explain-misses", "1")
	for _, want := range []string{"1 conversations, 9 memories, 5 questions with evidence", "recall@10", "single-hop", "auto-recall:", "query latency: p50"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("text report lacks %q:\n%s", want, out)
		}
	}
}

// A bad file among good ones: nothing is written to the --db store.
func TestEvalBadFileImportsNothing(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	good, _ := os.ReadFile("../../eval/testdata/mini.json")
	if err := os.WriteFile(bad, []byte(strings.Replace(strings.Replace(string(good), `"id": "mini"`, `"id": "other"`, 1),
		`"evidence": ["mini-s02-t02"]`, `"evidence": ["nope"]`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "store")
	code, _, errOut := runCLI(t, "eval", "../../eval/testdata/mini.json", bad, "--db", db, "--data-dir", dir)
	if code != 1 || !strings.Contains(errOut, "bad.json:24: question \"mini-q02\" cites unknown turn \"nope\"") {
		t.Fatalf("code %d: %s", code, errOut)
	}
	if _, err := os.Stat(db); err == nil {
		code, out, _ := runCLI(t, "stats", "--db", db, "--data-dir", dir, "--json")
		if code != 0 || !strings.Contains(out, `"totalCount": 0`) {
			t.Fatalf("store written: %s", out)
		}
	}
	// The same conversation twice is refused too.
	code, _, errOut = runCLI(t, "eval", "../../eval/testdata/mini.json", "../../eval/testdata/mini.json", "--data-dir", dir)
	if code != 1 || !strings.Contains(errOut, `conversation id "mini" is also the id of`) {
		t.Fatalf("code %d: %s", code, errOut)
	}
}
