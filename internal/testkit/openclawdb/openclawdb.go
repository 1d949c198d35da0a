// Package openclawdb writes OpenClaw's per-agent SQLite database as
// OpenClaw creates it, for the watcher's tests and the chaos harness: both
// hand the watcher a database it must read as it reads the real one, so
// both take its tables from here. Unlike testkit it does not import
// testing, because the chaos harness ships in the binary.
package openclawdb

import (
	"database/sql"
	"fmt"
)

// Schema is the part of OpenClaw 2026.9.6's per-agent database the watcher
// reads, as the real host creates it (integrations/openclaw/realhost).
const Schema = `
CREATE TABLE schema_meta (
  meta_key TEXT NOT NULL PRIMARY KEY, role TEXT NOT NULL, schema_version INTEGER NOT NULL,
  agent_id TEXT, app_version TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT;
CREATE TABLE session_windows (
  session_id TEXT NOT NULL PRIMARY KEY, session_key TEXT NOT NULL, created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL) STRICT;
CREATE TABLE transcript_events (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_json TEXT, created_at INTEGER NOT NULL,
  event_zstd BLOB, event_utf8_bytes INTEGER, navigation_json TEXT,
  PRIMARY KEY (session_id, seq),
  FOREIGN KEY (session_id) REFERENCES "session_windows"(session_id) ON DELETE CASCADE) STRICT;
`

// Create writes Schema into the empty database db and the schema_meta row
// OpenClaw 2026.9.6 writes for agent; created (epoch ms) is the row's
// created_at, which the watcher takes for the database's identity.
func Create(db *sql.DB, agent string, created int64) error {
	if _, err := db.Exec(Schema); err != nil {
		return fmt.Errorf("openclaw schema: %w", err)
	}
	if _, err := db.Exec(`INSERT INTO schema_meta VALUES ('primary', 'agent', 23, ?, '2026.9.6', ?, ?)`, agent, created, created); err != nil {
		return fmt.Errorf("openclaw schema_meta: %w", err)
	}
	return nil
}
