// Package producers turns agent activity into events on JetStream: the
// publisher every producer uses, and below it the hook ingest endpoint
// (producers/ingest) and the session-file and transcript watcher
// (producers/watcher). Producers never import workers; they meet only on
// JetStream.
//
// Publisher is the Go client every producer uses: it validates a hook
// event against its kind's schema, wraps it in the versioned
// schemas.HookEvent envelope and publishes it to
// clawmem.events.<kind>.<agent> with a Nats-Msg-Id derived from the hook,
// so a retried hook is stored once. ParseHookBodyFor reads the body shape an
// OpenClaw hook handler forwards ({"event", "ctx", "msgId"?}) and checks
// the agent it names against the one the request names; the endpoint
// calls it, and PublishFromReader does both for `clawmem publish`.
package producers
