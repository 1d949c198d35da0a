// Package producers turns agent activity into events on JetStream: the hook
// ingest endpoint, the client behind `clawmem publish`, and the session-file
// watcher. Producers never import workers; they meet only on JetStream.
package producers
