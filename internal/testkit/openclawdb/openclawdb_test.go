package openclawdb

import (
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"
)

func TestCreate(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "openclaw.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := Create(db, "main", 1796272661025); err != nil {
		t.Fatal(err)
	}
	var role, agent, version string
	var created, updated int64
	if err := db.QueryRow(`SELECT role, agent_id, app_version, created_at, updated_at FROM schema_meta`).
		Scan(&role, &agent, &version, &created, &updated); err != nil {
		t.Fatal(err)
	}
	if role != "agent" || agent != "main" || version != "2026.9.6" || created != 1796272661025 || updated != created {
		t.Fatalf("schema_meta: %s %s %s %d %d", role, agent, version, created, updated)
	}
	// The tables are STRICT, as OpenClaw makes them: a wrongly typed value
	// is refused rather than stored.
	if _, err := db.Exec(`INSERT INTO session_windows VALUES ('s', 'agent:main:main', 'not a time', 1)`); err == nil {
		t.Fatal("session_windows took a text created_at")
	}
	if err := Create(db, "main", 1); err == nil {
		t.Fatal("a second Create on the same database succeeded")
	}
}
