package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `clawmem context` asks a running clawmem's auto-recall, as the OpenClaw
// plugin does before a prompt, and prints the block the model would get,
// alone on stdout; a prompt nothing passes the gate for prints nothing and
// says why on stderr; --json is the whole reply.
func TestContextPrintsTheAutoRecallBlock(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clawmem up")
	}
	dir := t.TempDir()
	up := startUp(t, dir)
	const fact = "I prefer PostgreSQL over MySQL for every new service"
	file := filepath.Join(dir, "in.jsonl")
	row := `{"text":"` + fact + `","category":"preference","scope":"agent:main"}` + "\n"
	if err := os.WriteFile(file, []byte(row), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, "import", file, "--data-dir", dir); code != 0 {
		t.Fatalf("import: %s%s", out, errOut)
	}
	waitStats(t, up, 1)

	code, out, errOut := runCLI(t, "context", "Which database do I prefer, PostgreSQL or MySQL, for a new service?", "--data-dir", dir)
	if code != 0 || !strings.HasPrefix(out, "<relevant-memories>") || !strings.Contains(out, fact) ||
		!strings.HasSuffix(out, "</relevant-memories>\n") || errOut != "" {
		t.Fatalf("context (exit %d):\n%s\nstderr: %s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "context", "Which database do I prefer, PostgreSQL or MySQL, for a new service?", "--data-dir", dir, "--json")
	var reply struct {
		Details struct {
			PrependContext string   `json:"prependContext"`
			MemoryIDs      []string `json:"memoryIds"`
		} `json:"details"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &reply) != nil || !strings.Contains(reply.Details.PrependContext, fact) || len(reply.Details.MemoryIDs) != 1 {
		t.Fatalf("context --json (exit %d):\n%s", code, out)
	}
	// Another agent's auto-recall does not see main's memory.
	code, out, errOut = runCLI(t, "context", "Which database do I prefer, PostgreSQL or MySQL, for a new service?", "--agent", "other", "--data-dir", dir)
	if code != 0 || out != "" || !strings.Contains(errOut, "No memories for this prompt: the model gets nothing") {
		t.Fatalf("context as another agent (exit %d): %q, stderr %q", code, out, errOut)
	}
}
