package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/schemas"
)

// openDirEngine opens dir's store with its configuration (the default:
// the local embedder) for a test to fill or read; nothing may run on it,
// and the caller closes the store.
func openDirEngine(t *testing.T, dir string) (*memory.Engine, storeopen.EngineStore) {
	t.Helper()
	cfg, err := config.Load("", dir)
	if err != nil {
		t.Fatal(err)
	}
	eng, st, err := storeopen.Engine(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return eng, st
}

// seedTexts stores texts, in order, in dir's store with the default
// configuration (the local embedder) and returns the memories.
func seedTexts(t *testing.T, dir string, texts ...string) []schemas.Memory {
	t.Helper()
	eng, st := openDirEngine(t, dir)
	defer st.Close()
	out := make([]schemas.Memory, len(texts))
	for i, text := range texts {
		res, err := eng.Store(context.Background(), memory.Admin(), memory.StoreRequest{Text: text}, memory.DedupTool)
		if err != nil || res.Status != memory.Created {
			t.Fatalf("store %q: %+v, %v", text, res, err)
		}
		out[i] = res.Memory
	}
	return out
}

// listed is the ids the CLI's list prints, as 8-character prefixes.
func listed(t *testing.T, dir string) []string {
	t.Helper()
	code, out, errOut := runCLI(t, "list", "--data-dir", dir, "--json")
	var res struct {
		Details struct{ Memories []struct{ ID string } }
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("list: %d %s %s", code, out, errOut)
	}
	ids := make([]string, len(res.Details.Memories))
	for i, m := range res.Details.Memories {
		ids[i] = m.ID[:8]
	}
	return ids
}

// The README's try-it store (its hook's two memories, and a tea
// preference): `forget --query "dark mode"` deletes the dark-mode memory
// with the default local embedder; a query two memories fit alike lists
// them, deletes nothing, and tells the user how to delete one with this
// CLI, not with the tool's memoryId parameter.
func TestForgetByQueryCLI(t *testing.T) {
	dir := t.TempDir()
	ms := seedTexts(t, dir, "I prefer dark mode in every editor", "Remember that my dog is called Rex", "I prefer oolong tea in the morning")
	dark, rex, tea := ms[0].ID[:8], ms[1].ID[:8], ms[2].ID[:8]

	code, out, errOut := runCLI(t, "forget", "--query", "I prefer", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("ambiguous forget: %d %s", code, errOut)
	}
	for _, want := range []string{"nothing was deleted", "[" + dark + "]", "[" + tea + "]", "Delete one with: clawmem forget ID (e.g. clawmem forget "} {
		if !strings.Contains(out, want) {
			t.Errorf("ambiguous forget output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "memoryId") || strings.Contains(out, "UNTRUSTED") {
		t.Errorf("the CLI's hint names the tool's parameter or frame:\n%s", out)
	}
	if got := listed(t, dir); len(got) != 3 {
		t.Fatalf("after the ambiguous forget: %v, want all three", got)
	}
	// The tool's own text, which --json passes on, still names memoryId.
	code, out, _ = runCLI(t, "forget", "--query", "I prefer", "--data-dir", dir, "--json")
	if code != 0 || !strings.Contains(out, "specify memoryId") || !strings.Contains(out, `"action": "candidates"`) {
		t.Errorf("json ambiguous forget: %d %s", code, out)
	}

	code, out, errOut = runCLI(t, "forget", "--query", "dark mode", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "Memory "+dark+" forgotten.") {
		t.Fatalf("forget dark mode: %d %s %s", code, out, errOut)
	}
	got := listed(t, dir)
	if len(got) != 2 || !strings.Contains(strings.Join(got, " "), rex) || !strings.Contains(strings.Join(got, " "), tea) {
		t.Fatalf("after forgetting dark mode: %v, want %s and %s", got, rex, tea)
	}

	code, out, _ = runCLI(t, "forget", "--query", "quantum chromodynamics", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "nothing was deleted") || len(listed(t, dir)) != 2 {
		t.Errorf("unrelated forget: %d %s", code, out)
	}
}
