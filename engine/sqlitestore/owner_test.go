package sqlitestore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// foreignDB makes dir/memories.db as another program would: its own
// tables, in the journal mode given.
func foreignDB(t *testing.T, dir, journal string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", fileURI(filepath.Join(dir, FileName), "_pragma=journal_mode("+journal+")"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// snapshot is what an open must leave as it was: the names in dir and
// each file's hash.
func snapshot(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			out[e.Name()] = [32]byte{}
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = sha256.Sum256(b)
	}
	return out
}

func names(m map[string][32]byte) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// TestOpenLeavesForeignDatabasesAlone: a memories.db that clawmem did not
// make is refused with ErrForeign, and the directory is byte for byte as
// it was — no schema added, no switch to WAL (the header's version bytes
// are hashed with the rest), no LOCK, segment, -wal or -shm file.
func TestOpenLeavesForeignDatabasesAlone(t *testing.T) {
	notes := []string{`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`, `INSERT INTO notes (body) VALUES ('keep me')`}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"another program's database", func(t *testing.T, dir string) { foreignDB(t, dir, "DELETE", notes...) }, "without clawmem's tables"},
		{"another program's database in WAL mode", func(t *testing.T, dir string) { foreignDB(t, dir, "WAL", notes...) }, "without clawmem's tables"},
		{"a memories table of other columns", func(t *testing.T, dir string) {
			foreignDB(t, dir, "DELETE", `CREATE TABLE meta (k TEXT)`, `CREATE TABLE memories (id TEXT, body TEXT)`)
		}, `has no column "text"`},
		{"not a database", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, FileName), []byte("plain text, not SQLite"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is not a SQLite database"},
	}
	for _, c := range cases {
		for _, mustExist := range []bool{false, true} {
			t.Run(c.name, func(t *testing.T) {
				dir := t.TempDir()
				c.setup(t, dir)
				before := snapshot(t, dir)
				st, err := Open(context.Background(), dir, Options{Dimensions: 4, MustExist: mustExist})
				if err == nil {
					st.Close()
					t.Fatal("opened a foreign database")
				}
				if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want ErrForeign saying %q", err, c.want)
				}
				after := snapshot(t, dir)
				if names(after) != names(before) {
					t.Fatalf("files %s became %s", names(before), names(after))
				}
				for name, h := range before {
					if after[name] != h {
						t.Errorf("%s changed", name)
					}
				}
			})
		}
	}
}

// TestOpenMustExist: an open for reading on a directory without a store
// fails with ErrNoStore and creates nothing, not even the directory; a
// store made by an ordinary open opens, and so does an empty database
// file (what a creating open starts from).
func TestOpenMustExist(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	missing := filepath.Join(parent, "nothing-here")
	for _, dir := range []string{parent, missing} {
		_, err := Open(ctx, dir, Options{Dimensions: 4, MustExist: true})
		if !errors.Is(err, ErrNoStore) || !strings.Contains(err.Error(), "no clawmem store at "+dir) {
			t.Fatalf("%s: error %v, want ErrNoStore", dir, err)
		}
	}
	if got := names(snapshot(t, parent)); got != "" {
		t.Fatalf("a refused open left %s", got)
	}

	// The subtests' directories hold a '#' (the "#01" of a repeated
	// name); this one holds every character a SQLite URI gives a meaning.
	dir := filepath.Join(parent, "store #1 ?x=y %41")
	st, err := Open(ctx, dir, Options{Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if ok, err := Exists(ctx, dir); !ok || err != nil {
		t.Fatalf("Exists on a store: %v %v", ok, err)
	}
	if got := names(snapshot(t, parent)); got != "store #1 ?x=y %41" {
		t.Fatalf("the store went to %q", got)
	}
	st, err = Open(ctx, dir, Options{MustExist: true})
	if err != nil {
		t.Fatalf("reopen an existing store: %v", err)
	}
	st.Close()

	empty := filepath.Join(parent, "empty")
	os.Mkdir(empty, 0o700)
	os.WriteFile(filepath.Join(empty, FileName), nil, 0o600)
	if ok, err := Exists(ctx, empty); ok || err != nil {
		t.Fatalf("Exists on an empty file: %v %v", ok, err)
	}
	st, err = Open(ctx, empty, Options{Dimensions: 4})
	if err != nil {
		t.Fatalf("create over an empty file: %v", err)
	}
	st.Close()
}
