package main

import (
	"crypto/sha256"
	"database/sql"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine/sqlitestore"
)

// dirState is every name under dir with its content's hash.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		out = append(out, rel+" "+string(func() []byte { h := sha256.Sum256(b); return h[:] }()))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestDBFlagMakesNoStore: every command that reads or changes memories
// with --db refuses a directory that holds no clawmem store, and one
// holding another program's memories.db, leaving it exactly as it was
// (no LOCK, no vectors.seg, no schema, no WAL switch); import, which
// makes stores, still refuses the foreign database.
func TestDBFlagMakesNoStore(t *testing.T) {
	dataDir := t.TempDir()
	file := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(file, []byte(`{"text":"a fact"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := func(t *testing.T) string { return t.TempDir() }
	foreign := func(t *testing.T) string {
		dir := t.TempDir()
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlitestore.FileName))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, s := range []string{`CREATE TABLE notes (body TEXT)`, `INSERT INTO notes VALUES ('theirs')`} {
			if _, err := db.Exec(s); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	commands := [][]string{{"list"}, {"stats"}, {"show", "3f2a9c1e"}, {"search", "tea"}, {"export"}, {"forget", "3f2a9c1e"}, {"consolidate", "--dry-run"}}
	dirs := []struct {
		name string
		make func(*testing.T) string
		want string
	}{
		{"empty directory", empty, "no clawmem store at "},
		{"another program's database", foreign, "without clawmem's tables"},
	}
	for _, d := range dirs {
		cmds := commands
		if d.name != "empty directory" {
			cmds = append(cmds, []string{"import", file})
		}
		for _, c := range cmds {
			t.Run(d.name+"/"+c[0], func(t *testing.T) {
				dir := d.make(t)
				before := dirState(t, dir)
				code, _, errOut := runCLI(t, append(c, "--db", dir, "--data-dir", dataDir)...)
				if code != 1 || !strings.Contains(errOut, d.want) {
					t.Fatalf("exit %d, %q; want a refusal saying %q", code, errOut, d.want)
				}
				if after := dirState(t, dir); after != before {
					t.Fatalf("the directory changed")
				}
			})
		}
	}
}
