// Package producers turns agent activity into events on JetStream: the hook
// ingest endpoint, the client behind `clawmem publish`, and the session-file
// watcher. Producers never import workers; they meet only on JetStream.
//
// Publisher is the Go client every producer uses: it validates a hook
// event against its kind's schema, wraps it in the versioned
// schemas.HookEvent envelope and publishes it to
// clawmem.events.<kind>.<agent> with a Nats-Msg-Id derived from the hook,
// so a retried hook is stored once. ParseHookBody reads the body shape an
// OpenClaw hook handler forwards ({"event", "ctx", "msgId"?}), and
// PublishFromReader does both for `clawmem publish`. The HTTP endpoint is
// in producers/ingest.
package producers
