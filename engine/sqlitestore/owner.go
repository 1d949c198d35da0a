package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoStore is a directory without a clawmem store, refused by an open
// that must not create one (Options.MustExist).
var ErrNoStore = errors.New("no clawmem store")

// ErrForeign is a database file clawmem did not make. Nothing is written
// to it: no schema, no WAL switch, no lock or segment file beside it.
var ErrForeign = errors.New("not a clawmem store")

// sqliteMagic opens every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// ownColumns are columns of clawmem's memories table that another
// program's "memories" table is unlikely to have all of.
var ownColumns = []string{"id", "text", "vector", "category", "scope", "importance", "updated_at"}

// Exists reports whether dir holds a clawmem store. No database file, or
// an empty one, is no store (false, nil); a database file that is not
// clawmem's fails with ErrForeign. It reads the file and changes nothing.
func Exists(ctx context.Context, dir string) (bool, error) {
	path := filepath.Join(dir, FileName)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !fi.Mode().IsRegular():
		return false, fmt.Errorf("%w: %s is not a regular file", ErrForeign, path)
	case fi.Size() == 0:
		return false, nil
	}
	if err := checkMagic(path); err != nil {
		return false, err
	}
	// The probe must not write to a database it may have no business
	// with. Without a -wal file beside it the main file says everything,
	// and immutable=1 reads it with no lock and no -wal or -shm file
	// (mode=ro alone makes both for a database in WAL mode); with one, a
	// process may be writing, and a read-only connection reads its log.
	mode := "immutable=1"
	if _, err := os.Stat(path + "-wal"); err == nil {
		mode = "mode=ro"
	}
	db, err := sql.Open("sqlite", fileURI(path, mode))
	if err != nil {
		return false, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	tables := map[string]bool{}
	if err := eachString(ctx, db, `SELECT name FROM sqlite_master WHERE type = 'table'`, func(s string) { tables[s] = true }); err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if !tables["meta"] || !tables["memories"] {
		return false, fmt.Errorf("%w: %s is a SQLite database without clawmem's tables (meta, memories); "+
			"clawmem leaves it alone: give a directory of its own", ErrForeign, path)
	}
	cols := map[string]bool{}
	if err := eachString(ctx, db, `SELECT name FROM pragma_table_info('memories')`, func(s string) { cols[s] = true }); err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	for _, c := range ownColumns {
		if !cols[c] {
			return false, fmt.Errorf("%w: the memories table of %s has no column %q, so another program made it; "+
				"clawmem leaves it alone: give a directory of its own", ErrForeign, path, c)
		}
	}
	return true, nil
}

// fileURI is the driver's name for the database at path with the query
// given: SQLite reads the name as a URI, where a '#' would cut the path
// short and a '?' start the query.
func fileURI(path, query string) string {
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path) + "?" + query
}

func checkMagic(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, sqliteMagic) {
		return fmt.Errorf("%w: %s is not a SQLite database", ErrForeign, path)
	}
	return nil
}

func eachString(ctx context.Context, db *sql.DB, query string, fn func(string)) error {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		fn(s)
	}
	return rows.Err()
}
