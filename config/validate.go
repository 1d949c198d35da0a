package config

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/robfig/cron/v3"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/lancestore"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/engine/rerank"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/internal/httpguard"
)

// Validate checks values that defaults cannot fix.
func (c *Config) Validate() error {
	if problems, _ := c.validate(); len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// validate lists every out-of-range or unknown value, and the warnings of
// the checks it reuses (scopes').
func (c *Config) validate() (problems, warnings []string) {
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if err := c.Retrieval.Config.Validate(); err != nil {
		bad("%v", err)
	}
	if p := strings.ToLower(c.Retrieval.RerankProvider); !slices.Contains(rerankProviders, rerank.Provider(p)) {
		bad("retrieval.rerankProvider is %q: want one of %s", c.Retrieval.RerankProvider, rerankProviderList())
	}
	if n := c.Retrieval.RecallCache; n < 0 || n > MaxRecallCache {
		bad("retrieval.recallCache is %d: allowed range 0..%d (0: off)", n, MaxRecallCache)
	}
	if n := c.Retrieval.RecallCacheSeconds; n < 1 || n > MaxRecallCacheSeconds {
		bad("retrieval.recallCacheSeconds is %d: allowed range 1..%d", n, MaxRecallCacheSeconds)
	}
	switch strings.ToLower(c.Embedding.Provider) {
	case embed.ProviderOpenAI, embed.ProviderLocal:
	default:
		bad("embedding.provider is %q: want openai or local", c.Embedding.Provider)
	}
	if c.Embedding.Dimensions < 0 {
		bad("embedding.dimensions is %d: want a positive number", c.Embedding.Dimensions)
	}
	if sm, err := scopes.New(c.Scopes); err != nil {
		bad("%v", err)
	} else {
		warnings = append(warnings, sm.Warnings()...)
	}
	switch c.Store.Index {
	case "auto", "exact", "approximate":
	default:
		bad("store.index is %q: want auto, exact or approximate", c.Store.Index)
	}
	switch c.Store.Memory {
	case "", "float32":
	case "int8":
		if c.Store.Index == "exact" {
			bad("store.memory \"int8\" needs the approximate index (store.index auto or approximate): an exact index scans every float32 vector")
		}
		if c.Store.Backend == "lancedb" {
			bad("store.memory only applies to store.backend \"sqlite\"")
		}
	default:
		bad("store.memory is %q: want float32 or int8", c.Store.Memory)
	}
	if c.Store.NList < 0 || c.Store.NProbe < 0 {
		bad("store.nlist and store.nprobe must not be negative (0: chosen from the number of memories)")
	}
	switch c.Store.Backend {
	case "", "sqlite":
		if c.Store.StorageOptions != (lancestore.StorageOptions{}) {
			bad("store.storageOptions only applies to store.backend \"lancedb\"")
		}
		if lancestore.IsURI(c.DBPath) {
			bad("dbPath %q is a URI: only store.backend \"lancedb\" opens one (sqlite needs a local directory)", c.DBPath)
		}
	case "lancedb":
		if err := c.Store.StorageOptions.Validate(); err != nil {
			bad("store.storageOptions: %v", err)
		}
	default:
		bad("store.backend is %q: want sqlite or lancedb", c.Store.Backend)
	}
	if c.CaptureMaxChars < 100 || c.CaptureMaxChars > 10000 {
		bad("captureMaxChars is %d: allowed range 100..10000", c.CaptureMaxChars)
	}
	if c.SessionMemory.MessageCount < 1 {
		bad("sessionMemory.messageCount is %d: want a positive number", c.SessionMemory.MessageCount)
	}
	if _, err := redact.ParseMode(c.Secrets.Mode); err != nil {
		bad("secrets.mode is %q: want redact, refuse or off", c.Secrets.Mode)
	}
	if c.NATS.Port < -1 || c.NATS.Port > 65535 {
		bad("nats.port is %d: allowed range -1..65535 (-1: any free port)", c.NATS.Port)
	}
	if c.NATS.Partitions < 1 || c.NATS.Partitions > 1024 {
		bad("nats.partitions is %d: allowed range 1..1024", c.NATS.Partitions)
	}
	if c.NATS.Replicas < 1 || c.NATS.Replicas > 5 {
		bad("nats.replicas is %d: allowed range 1..5 (JetStream's limit)", c.NATS.Replicas)
	}
	if c.NATS.Replicas > 1 && c.NATS.URL == "" {
		bad("nats.replicas is %d, but the embedded server is one node: set nats.url to a cluster", c.NATS.Replicas)
	}
	if _, _, err := net.SplitHostPort(c.Ingest.Addr); err != nil {
		bad("ingest.addr is %q: want host:port", c.Ingest.Addr)
	} else if c.Ingest.Insecure && !httpguard.IsLoopbackAddr(c.Ingest.Addr) {
		bad("ingest.insecure is true but ingest.addr %s is off loopback: anyone who can reach it could write memories; "+
			"drop ingest.insecure (hooks then send the token) or listen on 127.0.0.1", c.Ingest.Addr)
	} else if c.Ingest.Insecure && c.Ingest.Token != "" {
		bad("ingest.insecure is true and ingest.token is set: choose one")
	}
	if _, _, err := c.NATS.SyncPolicy(); err != nil {
		bad("nats.sync is %v", err)
	}
	if _, err := c.NATS.LeaseDuration(); err != nil {
		bad("nats.leaseTTL is %v", err)
	}
	for _, r := range []struct{ key, age string }{
		{"streams.events.maxAge", c.Streams.Events.MaxAge}, {"streams.transcripts.maxAge", c.Streams.Transcripts.MaxAge},
		{"streams.dlq.maxAge", c.Streams.DLQ.MaxAge},
	} {
		if _, err := ParseAge(r.age); err != nil {
			bad("%s is %v", r.key, err)
		}
	}
	if c.UI.Listen != "off" {
		if err := CheckUIListen(c.UI.Listen, c.UI.AdminToken); err != nil {
			bad("%v", err)
		}
	}
	d := c.Distill
	switch strings.ToLower(d.Provider) {
	case "", "none", "gemini", "openai":
	default:
		bad("distill.provider is %q: want gemini, openai or empty", d.Provider)
	}
	if d.MaxFinal != nil && (*d.MaxFinal < 0 || *d.MaxFinal > distill.MaxFinalLimit) {
		bad("distill.maxFinal is %d: allowed range 0..%d", *d.MaxFinal, distill.MaxFinalLimit)
	}
	for _, f := range []struct {
		key string
		v   int
	}{
		{"distill.mapChunkChars", d.MapChunkChars}, {"distill.mapOverlapMsgs", d.MapOverlapMsgs},
		{"distill.parallelism", d.Parallelism}, {"distill.maxTokens", d.MaxTokens}, {"distill.workers", d.Workers},
		{"distill.timeoutSeconds", d.TimeoutSeconds}, {"distill.idleMinutes", d.IdleMinutes},
	} {
		if f.v < 0 {
			bad("%s is %d: must not be negative", f.key, f.v)
		}
	}
	checkSchedule("distill.schedule", d.Schedule, bad)
	x := c.SmartExtraction
	if x.TokensPerAgentPerHour < -1 {
		bad("smartExtraction.tokensPerAgentPerHour is %d: want a positive number, or -1 for no limit", x.TokensPerAgentPerHour)
	}
	for _, f := range []struct {
		key    string
		v, max int
	}{{"smartExtraction.parallelism", x.Parallelism, 64}, {"smartExtraction.similar", x.Similar, 10}, {"smartExtraction.timeoutSeconds", x.TimeoutSeconds, 600}} {
		if f.v < 0 || f.v > f.max {
			bad("%s is %d: allowed range 0..%d", f.key, f.v, f.max)
		}
	}
	cj := c.Jobs.Consolidate
	checkSchedule("jobs.consolidate.schedule", cj.Schedule, bad)
	if cj.MergeMin < 0.5 || cj.MergeMin > 1 {
		bad("jobs.consolidate.mergeMin is %v: allowed range 0.5..1", cj.MergeMin)
	}
	if cj.ArchiveFloor < 0 || cj.ArchiveFloor > 1 {
		bad("jobs.consolidate.archiveFloor is %v: allowed range 0..1 (0: archive nothing)", cj.ArchiveFloor)
	}
	if cj.ArchiveHalfLifeDays < 0 {
		bad("jobs.consolidate.archiveHalfLifeDays is %v: must not be negative", cj.ArchiveHalfLifeDays)
	}
	b := c.Jobs.Backup
	checkSchedule("jobs.backup.schedule", b.Schedule, bad)
	if b.Keep < 1 {
		bad("jobs.backup.keep is %d: want a positive number", b.Keep)
	}
	return problems, warnings
}

// checkSchedule accepts what the cron jobs parse (cron.ParseStandard: five
// fields or a descriptor such as @hourly) and "off".
func checkSchedule(key, spec string, bad func(string, ...any)) {
	if spec == "off" {
		return
	}
	if _, err := cron.ParseStandard(spec); err != nil {
		bad("%s is %q: %v (want a cron spec such as @daily or \"0 3 * * *\", or off)", key, spec, err)
	}
}

var rerankProviders = []rerank.Provider{rerank.Jina, rerank.SiliconFlow, rerank.Voyage, rerank.Pinecone, rerank.DashScope, rerank.TEI}

func rerankProviderList() string {
	names := make([]string, len(rerankProviders))
	for i, p := range rerankProviders {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}
