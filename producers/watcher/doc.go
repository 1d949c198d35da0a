// Package watcher is clawmem's session-file watcher: it follows OpenClaw's
// JSONL session transcripts under <stateDir>/agents/<agentId>/sessions/ and
// publishes every user and assistant message, once, as a
// schemas.TranscriptEntry on clawmem.transcript.<agent>.<session>.
//
// It watches with fsnotify and rescans every few seconds as a safety net,
// so a missed event delays an entry but never loses it. An agents directory
// that does not exist yet is polled for by the same rescan.
//
// # Offsets and exactly-once
//
// Each file has a record in the schemas.BucketWatch KV bucket: the byte
// offset of the first line not yet published, the session id, a SHA-256 of
// the bytes before the offset, and a file id that names this generation of
// the file (a new one is chosen, and stored, before a new, replaced or
// truncated file is read from byte 0).
// Every entry's Nats-Msg-Id is transcript.<agent>.<fileId>.<offset>, so a
// line published again after a crash is dropped by the stream's duplicate
// window. Offsets are stored only after JetStream acknowledged the entries
// (every Config.CommitEvery entries and at the end of each read), and on
// restart the watcher also looks at the last entry already in the stream
// for the session and skips what it finds there, so a restart long after a
// crash re-emits nothing either.
//
// # Files
//
// <sessionId>.jsonl and thread files <sessionId>-topic-<id>.jsonl are
// followed; a topic file's session id is its name without .jsonl, any other
// file's is the id of its session header line (else its name). Lines are
// read only when complete: a last line without its newline waits. A file
// that begins with the bytes already handled — rewritten in place, or
// replaced by a copy renamed over it (as editors and compactions write),
// with lines added or not — keeps its generation and is followed on from
// its offset, so nothing is published twice. A file that shrinks below its
// offset is given Config.RegrowWait to be written back, since a rewrite in
// place passes through a shorter file; one still shorter then, or that
// begins with other bytes, is read again from the start as a new
// generation. A file renamed to
// <name>.jsonl.reset.<ts> or <name>.jsonl.deleted.<ts> is matched to its
// original by name, inode and a fingerprint of its first bytes, read to
// its end, and the new file at the original name is followed from byte 0.
// Rotated files the watcher never saw as live files are skipped. Lines that
// are not transcript entries, or are longer than distill.MaxLineBytes, are
// logged and skipped; a text too large for one NATS message is cut to fit.
// Directories under agents/ whose names are not valid agent ids are skipped
// with a warning.
//
// Text is published raw, with OpenClaw's inbound envelope still in place:
// the transcript stream is the source of truth, and the consumers (capture
// rules, the distiller) strip the envelope themselves.
package watcher
