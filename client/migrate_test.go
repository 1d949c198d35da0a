package client_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/schemas"
)

// TestCheckSources: what check finds at each kind of path, the legacy
// paths looked at when no source is given, and the text it prints.
func TestCheckSources(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	t.Setenv("HOME", home)

	found := client.CheckSources(ctx, "")
	if len(found) != len(client.LegacyPaths) {
		t.Fatalf("%d paths checked, want the %d legacy ones", len(found), len(client.LegacyPaths))
	}
	for _, s := range found {
		if s.Kind != "missing" || s.Ready || !strings.HasPrefix(s.Path, home) {
			t.Fatalf("legacy path %+v", s)
		}
	}
	var text bytes.Buffer
	client.WriteChecks(&text, found)
	if !strings.Contains(text.String(), filepath.Join(home, ".openclaw", "memory", "lancedb")+": nothing there") || !strings.HasSuffix(text.String(), "nothing to migrate\n") {
		t.Fatalf("text:\n%s", text.String())
	}
	if _, err := client.FoundSources(""); err == nil || !strings.Contains(err.Error(), "no legacy memories found at ~/.openclaw/memory/lancedb") {
		t.Fatalf("FoundSources without any: %v", err)
	}

	// A legacy path that exists is found; a given source always is.
	legacy := filepath.Join(home, ".openclaw", "memory", "lancedb-pro")
	if err := os.MkdirAll(legacy, 0o755); err != nil {
		t.Fatal(err)
	}
	if paths, err := client.FoundSources(""); err != nil || len(paths) != 1 || paths[0] != legacy {
		t.Fatalf("FoundSources = %v, %v; want %s", paths, err, legacy)
	}
	if paths, err := client.FoundSources("~/nothing"); err != nil || len(paths) != 1 || paths[0] != filepath.Join(home, "nothing") {
		t.Fatalf("FoundSources(given) = %v, %v", paths, err)
	}

	file := writeJSONL(t, sampleMemories()[:3], `{"text":`, `[]`)
	s := client.CheckSource(ctx, file)
	if !s.Ready || s.Rows != 3 || s.Kind != "JSONL" || !strings.Contains(s.Note, "2 rows cannot be read") {
		t.Fatalf("file with bad rows: %+v", s)
	}
	store := storeDir(t, sampleMemories())
	if s := client.CheckSource(ctx, store); !s.Ready || s.Rows != len(sampleTexts) || !strings.Contains(s.Kind, "clawmem store at") {
		t.Fatalf("store: %+v", s)
	}
	if s := client.CheckSource(ctx, legacy); s.Ready || s.Kind != "unknown" || s.Note == "" {
		t.Fatalf("empty directory: %+v", s)
	}
	text.Reset()
	client.WriteChecks(&text, []client.SourceCheck{client.CheckSource(ctx, file), client.CheckSource(ctx, legacy)})
	for _, want := range []string{file + ": JSONL, 3 memories: ready (`clawmem migrate run --source " + file + "`)", "  note: 2 rows cannot be read", legacy + ": unknown: neither"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "nothing to migrate") {
		t.Errorf("a ready source, yet:\n%s", text.String())
	}
}

// TestMigrateAndVerify: a file and a store go in through Migrate, each
// outcome handed on; Verify then finds every row, and tells a row changed
// since, one deleted, and one kept out as a near-duplicate — on both
// targets.
func TestMigrateAndVerify(t *testing.T) {
	ctx := context.Background()
	mems := sampleMemories()
	fromStore, fromFile := mems[:6], mems[6:]
	store := storeDir(t, fromStore)
	dup := schemas.Memory{ID: sampleID(50), Text: fromFile[0].Text, Category: schemas.CategoryFact, Scope: fromFile[0].Scope, Importance: 0.5, Timestamp: 1_700_000_000_000}
	file := writeJSONL(t, append(fromFile, dup), `not json`)
	for name, b := range bulks(t) {
		t.Run(name, func(t *testing.T) {
			defer b.Close()
			var outcomes []client.ImportOutcome
			rowsFailed := errors.New("rows failed")
			err := client.Migrate(ctx, b, []string{file, store}, client.ImportJob{}, func(o client.ImportOutcome, err error) error {
				if err != nil {
					t.Fatalf("%s: %v", o.Source, err)
				}
				outcomes = append(outcomes, o)
				if o.Failed > 0 {
					return rowsFailed
				}
				return nil
			})
			if !errors.Is(err, rowsFailed) || len(outcomes) != 2 {
				t.Fatalf("Migrate = %v after %d sources; want every source imported, then the failed rows", err, len(outcomes))
			}
			if o := outcomes[0]; o.Imported != len(fromFile) || o.Duplicates != 1 || o.Failed != 1 {
				t.Errorf("file: %+v", o.Report)
			}
			if o := outcomes[1]; o.Imported != len(fromStore) || !strings.Contains(o.Source, "clawmem store") {
				t.Errorf("store: %+v", o)
			}
			sameMemories(t, mems, stored(t, b))

			reports, err := client.Verify(ctx, b, []string{file, store}, "")
			if err != nil || len(reports) != 2 || client.NotStored(reports) != 0 {
				t.Fatalf("verify: %+v, %v", reports, err)
			}
			if r := reports[0]; r.Rows != len(fromFile)+2 || r.Present != len(fromFile) || r.Duplicates != 1 || r.Unreadable != 1 {
				t.Errorf("file report %+v", r)
			}
			if r := reports[1]; r.Rows != len(fromStore) || r.Present != len(fromStore) {
				t.Errorf("store report %+v", r)
			}

			// One row changed, one gone: both named, with the file's line.
			changed := fromFile[1]
			changed.Text = "Passwords   rotate\nevery week now"
			edited := writeJSONL(t, []schemas.Memory{changed, {ID: sampleID(70), Text: "A memory that never arrived", Scope: "global", Category: schemas.CategoryFact, Importance: 0.5, Timestamp: 2}})
			reports, err = client.Verify(ctx, b, []string{edited}, "")
			if err != nil || client.NotStored(reports) != 2 {
				t.Fatalf("verify edited: %+v, %v", reports, err)
			}
			r := reports[0]
			if r.Changed != 1 || r.Missing != 1 || len(r.Examples) != 2 ||
				r.Examples[0] != `line 1 (`+changed.ID+`): changed: "Passwords rotate every week now"` ||
				r.Examples[1] != `line 2 (`+sampleID(70)+`): missing: "A memory that never arrived"` {
				t.Fatalf("edited report %+v", r)
			}
			var text bytes.Buffer
			client.WriteVerify(&text, reports)
			if !strings.Contains(text.String(), "2 rows: 0 present, 0 stored as duplicates, 1 changed, 1 missing, 0 unreadable\n  line 1 (") {
				t.Fatalf("text:\n%s", text.String())
			}

			// A scope the migration was run with is applied to the source again.
			if reports, err := client.Verify(ctx, b, []string{store}, "custom:elsewhere"); err != nil || reports[0].Present != len(fromStore) {
				t.Fatalf("verify with a scope: %+v, %v", reports, err)
			}
		})
	}
}

// TestMigrateStops: a source that cannot be opened stops the migration, as
// does an error the caller returns for an import that stopped.
func TestMigrateStops(t *testing.T) {
	ctx := context.Background()
	b := bulks(t)["local"]
	defer b.Close()
	file := writeJSONL(t, sampleMemories()[:2])
	calls := 0
	err := client.Migrate(ctx, b, []string{file, filepath.Join(t.TempDir(), "gone")}, client.ImportJob{}, func(client.ImportOutcome, error) error {
		calls++
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "does not exist") || calls != 1 {
		t.Fatalf("Migrate = %v after %d sources", err, calls)
	}
	stop := errors.New("stop")
	calls = 0
	err = client.Migrate(ctx, b, []string{file, file}, client.ImportJob{Options: client.ImportOptions{Scope: "team:x"}}, func(_ client.ImportOutcome, err error) error {
		calls++
		if _, ok := errors.AsType[client.ImportRefusedError](err); !ok {
			t.Fatalf("import error %v", err)
		}
		return stop
	})
	if err != stop || calls != 1 {
		t.Fatalf("Migrate = %v after %d sources; want it to stop at the first refusal", err, calls)
	}
}
