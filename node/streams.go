package node

import (
	"log/slog"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/internal/topology"
)

// TopologyConfig is the streams' configuration cfg asks for: its replicas
// and the events', transcripts' and dead letters' max ages
// (streams.*.maxAge), and the writers' lease TTL (nats.leaseTTL, already
// validated). topology.Ensure applies it to streams that exist
// already, so a changed age takes effect at the next start.
func TopologyConfig(cfg *config.Config, log *slog.Logger) topology.Config {
	events, transcripts, dlq := cfg.Streams.MaxAges()
	lease, _ := cfg.NATS.LeaseDuration()
	return topology.Config{Replicas: cfg.NATS.Replicas, EventsMaxAge: events, TranscriptsMaxAge: transcripts, DLQMaxAge: dlq,
		LeaseTTL: lease, Log: log}
}
