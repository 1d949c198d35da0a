// Package config is clawmem's configuration tree: the keys of the seed
// plugins' config object (embedding.*, dbPath, retrieval.*, ...) plus
// clawmem's own, loaded from a JSON, JSON5 or YAML file — or from an
// OpenClaw document's plugin entry — with ${ENV} references resolved,
// every key and value checked, and defaults applied.
package config

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/lancestore"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/engine/rerank"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/internal/httpguard"
	"github.com/clawmem/clawmem/schemas"
)

// Config is the whole configuration. Its json tags are the config keys;
// they carry no omitempty so that `clawmem config show` lists every key.
type Config struct {
	// DataDir holds everything clawmem writes: the store, NATS data,
	// backups. Default ~/.clawmem.
	DataDir string `json:"dataDir"`
	// DBPath is the store's directory. Default <dataDir>/store (the seed's
	// ~/.openclaw/memory/lancedb-pro is a LanceDB directory; clawmem's
	// store is SQLite and lives with the rest of its data).
	DBPath    string        `json:"dbPath"`
	Embedding Embedding     `json:"embedding"`
	Store     Store         `json:"store"`
	Retrieval Retrieval     `json:"retrieval"`
	Scopes    scopes.Config `json:"scopes"`

	AutoCapture *bool `json:"autoCapture"` // default true
	// AutoRecall is accepted from the seed plugins and ignored (see
	// ignored in load.go).
	AutoRecall            bool          `json:"autoRecall"`
	CaptureAssistant      bool          `json:"captureAssistant"`
	CaptureMaxChars       int           `json:"captureMaxChars"`       // 100..10000, default 500
	EnableManagementTools bool          `json:"enableManagementTools"` // clawmem mcp's list and stats tools
	SessionMemory         SessionMemory `json:"sessionMemory"`

	NATS    NATS    `json:"nats"`
	Ingest  Ingest  `json:"ingest"`
	UI      UI      `json:"ui"`
	Distill Distill `json:"distill"`
	// SmartExtraction: with distill's LLM configured, the capture stage
	// lets the model decide per turn what to add, supersede or invalidate.
	SmartExtraction SmartExtraction `json:"smartExtraction"`
	Watch           Watch           `json:"watch"`
	Jobs            Jobs            `json:"jobs"`
	MCP             MCP             `json:"mcp"`
	Streams         Streams         `json:"streams"`
	Secrets         Secrets         `json:"secrets"`
}

// Distill configures session distillation: the LLM (none: the extractive,
// rule-based distiller), the map-reduce, the distill worker and the
// scheduled cursor distiller.
type Distill struct {
	// Provider is gemini, openai (any OpenAI-compatible chat endpoint) or
	// empty for none.
	Provider string `json:"provider"`
	Model    string `json:"model"`
	APIKey   string `json:"apiKey"`
	BaseURL  string `json:"baseURL"`
	// TimeoutSeconds bounds one LLM call (default 60).
	TimeoutSeconds int `json:"timeoutSeconds"`
	// JSONSchema sends the strict json_schema response format (openai).
	JSONSchema     bool `json:"jsonSchema"`
	MapChunkChars  int  `json:"mapChunkChars"`  // default 12000
	MapOverlapMsgs int  `json:"mapOverlapMsgs"` // default 10
	MaxFinal       *int `json:"maxFinal"`       // 0..20 (0: store none), default 20
	Parallelism    int  `json:"parallelism"`    // concurrent map calls, default 4
	MaxTokens      int  `json:"maxTokens"`      // per-session token budget, 0 = none
	LLMReduce      bool `json:"llmReduce"`
	// Workers is how many sessions are distilled at once (default 2).
	Workers int `json:"workers"`
	// Schedule is the cursor distiller's cron spec (default @hourly;
	// "off" disables it).
	Schedule string `json:"schedule"`
	// IdleMinutes: a session must be quiet this long before the cursor
	// distiller takes its new messages (default 30).
	IdleMinutes int `json:"idleMinutes"`
	// Agents is the cursor distiller's allowlist (empty, "*" or "all":
	// every agent); $OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS also sets it.
	Agents []string `json:"agents"`
}

// SmartExtraction configures LLM extraction in the capture stage. It uses
// the distill block's model; with none configured it is off whatever
// Enabled says.
type SmartExtraction struct {
	Enabled *bool `json:"enabled"` // default true (when an LLM is configured)
	// TokensPerAgentPerHour is each agent's LLM budget; past it turns take
	// the capture rules. Default 200000; -1: none.
	TokensPerAgentPerHour int `json:"tokensPerAgentPerHour"`
	Parallelism           int `json:"parallelism"`    // concurrent LLM calls, default 4
	Similar               int `json:"similar"`        // memories shown per message, default 5
	TimeoutSeconds        int `json:"timeoutSeconds"` // per turn, default 30
}

// On reports whether smart extraction runs: enabled and an LLM set.
func (c *Config) SmartExtractionOn() bool {
	p := strings.ToLower(c.Distill.Provider)
	return (c.SmartExtraction.Enabled == nil || *c.SmartExtraction.Enabled) && p != "" && p != "none"
}

// Watch is the session-file watcher.
type Watch struct {
	// Enabled runs the watcher in `clawmem up` (default true).
	Enabled *bool `json:"enabled"`
	// StateDir is OpenClaw's state directory (default $OPENCLAW_STATE_DIR,
	// else ~/.openclaw).
	StateDir string `json:"stateDir"`
}

// MCP configures `clawmem mcp`.
type MCP struct {
	// Agent is the agent whose memories the MCP tools read and write,
	// when --agent is not given.
	Agent string `json:"agent"`
}

// Jobs are clawmem's scheduled jobs.
type Jobs struct {
	Backup      Backup      `json:"backup"`
	Consolidate Consolidate `json:"consolidate"`
}

// Consolidate is the scheduled consolidation: near-duplicates merged into
// one memory that supersedes them, faded memories archived (never deleted).
type Consolidate struct {
	// Schedule is a cron spec (default @daily; "off" disables it).
	Schedule string `json:"schedule"`
	// MergeMin is the vector score from which two memories of a scope
	// are merged (default 0.90; the capture path's duplicates are 0.95).
	MergeMin float64 `json:"mergeMin"`
	// ArchiveFloor archives memories whose importance × 0.5^(age /
	// archiveHalfLifeDays) fell below it; 0 (the default) archives none.
	ArchiveFloor        float64 `json:"archiveFloor"`
	ArchiveHalfLifeDays float64 `json:"archiveHalfLifeDays"` // default 180
}

// Backup is the scheduled backup of the store.
type Backup struct {
	// Schedule is a cron spec (default @daily; "off" disables it).
	Schedule string `json:"schedule"`
	// Keep is how many backups are kept, newest first (default 7, the
	// seed's).
	Keep int `json:"keep"`
	// Dir holds the backups (default <dataDir>/backups).
	Dir string `json:"dir"`
	// WithVectors also writes every memory's vector, so that a restore
	// needs no re-embedding (the seed's backups have none).
	WithVectors bool `json:"withVectors"`
}

// SessionMemory is the seed's sessionMemory block.
type SessionMemory struct {
	Enabled      bool `json:"enabled"`
	MessageCount int  `json:"messageCount"` // default 15
}

// NATS says where the pipeline's NATS is.
type NATS struct {
	// URL of an external server or cluster; empty runs one embedded.
	URL string `json:"url"`
	// Port of the embedded server (default 4244, not 4222, so a system
	// NATS keeps its port; -1 picks a free one).
	Port int `json:"port"`
	// Credentials is a .creds file for an external server.
	Credentials string `json:"credentials"`
	// Replicas is how many copies JetStream keeps of every stream, bucket
	// and object store (default 1; 3 on a 3-node cluster, so that losing
	// one node loses nothing and stops nothing).
	Replicas int `json:"replicas"`
	// Partitions is how many partitions agents map to in the memory log's
	// subjects (default 16); fixed at deploy: changing it moves every
	// memory's subject.
	Partitions int `json:"partitions"`
	// Sync is when the embedded server flushes JetStream to disk:
	// "default" (every 2 minutes: an acknowledged event survives a crash
	// of the process, not a power loss), "always" (each write before its
	// acknowledgement), or a duration such as "1s".
	Sync string `json:"sync"`
	// LeaseTTL is how long a memory writer's partition leases outlive its
	// last renewal (default 15s): how long the others wait before taking
	// over from a writer that died, and how long a writer starved of CPU
	// may miss renewals before it loses its partitions. The same on every
	// node of a cluster.
	LeaseTTL string `json:"leaseTTL"`
}

// LeaseDuration reads LeaseTTL; empty is the default.
func (n NATS) LeaseDuration() (time.Duration, error) {
	if n.LeaseTTL == "" {
		return schemas.DefaultLeaseTTL, nil
	}
	d, err := time.ParseDuration(n.LeaseTTL)
	if err != nil || d < 3*time.Second || d > 5*time.Minute {
		return 0, fmt.Errorf("%q: want a duration from 3s to 5m such as 15s", n.LeaseTTL)
	}
	return d, nil
}

// SyncPolicy reads Sync: always, or the flush interval (0: the server's
// default).
func (n NATS) SyncPolicy() (always bool, interval time.Duration, err error) {
	switch n.Sync {
	case "", "default":
		return false, 0, nil
	case "always":
		return true, 0, nil
	}
	d, err := time.ParseDuration(n.Sync)
	if err != nil || d <= 0 {
		return false, 0, fmt.Errorf("%q: want default, always or a positive duration such as 1s", n.Sync)
	}
	return false, d, nil
}

// Ingest is the hook ingest HTTP endpoint.
type Ingest struct {
	Addr string `json:"addr"` // default 127.0.0.1:7433
	// Token is the bearer token hooks send; empty: the data dir's own
	// (auth/ingest.token, made at first start). ${VAR} is expanded.
	Token string `json:"token"`
	// Insecure serves without any token, for throwaway set-ups on
	// loopback: then every local process may write memories.
	Insecure bool `json:"insecure"`
	// AllowedHosts are further names clients reach the endpoint by (the
	// Host header); loopback names are always allowed.
	AllowedHosts []string `json:"allowedHosts"`
	// AgentTokens are the HTTP API's bearer tokens, agent → token (${VAR}
	// expanded), besides the data dir's auth/http/<agent>.token files that
	// `clawmem agent token` makes: for nodes that do not share the data
	// dir. Each token acts for its agent alone.
	AgentTokens map[string]string `json:"agentTokens,omitempty"`
}

// UI is the web console `clawmem up` serves (and `clawmem ui` runs).
type UI struct {
	// Listen is host:port (default 127.0.0.1:7434); "off" serves none
	// from `clawmem up`.
	Listen string `json:"listen"`
	// ReadToken logs in read-only, AdminToken with every action; off
	// loopback AdminToken is required, on loopback it defaults to the data
	// dir's own (auth/console.token). ${VAR} references are expanded.
	ReadToken  string `json:"readToken"`
	AdminToken string `json:"adminToken"`
	// AllowedHosts are further names browsers reach the console by (the
	// Host header); loopback names are always allowed.
	AllowedHosts []string `json:"allowedHosts"`
}

// CheckUIListen checks a console address before anything binds it: a
// host:port, and off loopback only with a configured admin token (the
// generated one is for the machine's own user, not for a network).
func CheckUIListen(listen, adminToken string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("ui.listen is %q: want host:port, or off", listen)
	}
	if !httpguard.IsLoopbackHost(host) && adminToken == "" {
		return fmt.Errorf("ui.listen is %s, off loopback: set ui.adminToken (and ui.readToken for read-only users), or listen on 127.0.0.1", listen)
	}
	return nil
}

// Retrieval is the seed's retrieval.* block: the pipeline's knobs plus the
// cross-encoder's endpoint.
type Retrieval struct {
	retrieve.Config
	RerankAPIKey   string `json:"rerankApiKey"`
	RerankModel    string `json:"rerankModel"`
	RerankEndpoint string `json:"rerankEndpoint"`
	RerankProvider string `json:"rerankProvider"`
	// RecallCache is how many recall answers the engine keeps
	// (memory.WithRecallCache; 0: none), each for at most
	// RecallCacheSeconds: a prompt recalled twice in a turn is embedded
	// and searched once. clawmem's own keys.
	RecallCache        int `json:"recallCache"`
	RecallCacheSeconds int `json:"recallCacheSeconds"`
}

// MaxRecallCache and MaxRecallCacheSeconds bound the recall cache's keys:
// an answer holds its memories' vectors, and one older than an hour has
// lost its recency scores.
const (
	MaxRecallCache        = 100_000
	MaxRecallCacheSeconds = 3600
)

// RecallCacheTTL is how long a recall answer is kept.
func (r Retrieval) RecallCacheTTL() time.Duration {
	return time.Duration(r.RecallCacheSeconds) * time.Second
}

// Embedding is the seed's embedding.* block, plus provider. memory-lancedb's
// spelling baseUrl is accepted for baseURL.
type Embedding struct {
	Provider    string `json:"provider"`
	APIKey      string `json:"apiKey"`
	Model       string `json:"model"`
	BaseURL     string `json:"baseURL"`
	Dimensions  int    `json:"dimensions"`
	TaskQuery   string `json:"taskQuery"`
	TaskPassage string `json:"taskPassage"`
	Normalized  *bool  `json:"normalized"`
}

// Store configures the store backend and its vector index.
type Store struct {
	// Index is "auto" (default: exact below AutoExactBelow memories, then
	// approximate), "exact" or "approximate" (IVF with exact re-scoring).
	Index  string `json:"index"`
	NList  int    `json:"nlist"`
	NProbe int    `json:"nprobe"`
	// Memory is "float32" (default: every vector in RAM) or "int8": only
	// the approximate index's int8 codes stay in RAM, and the float32
	// vectors are memory-mapped from the vector segment beside the
	// database (page cache, not heap), read to re-score candidates.
	Memory string `json:"memory"`
	// Backend is "sqlite" (empty: the default; pure Go, embedded) or
	// "lancedb": a LanceDB table in memory-lancedb-pro's schema, which
	// needs a build with -tags lancedb and LanceDB's native library; dbPath
	// may then be a LanceDB URI such as s3://bucket/prefix.
	Backend string `json:"backend"`
	// StorageOptions configure the object store of a LanceDB URI (S3
	// endpoint, region, keys); lancedb only.
	StorageOptions lancestore.StorageOptions `json:"storageOptions"`
}

// EnvDataDir and EnvConfig override the default data dir and config file.
const (
	EnvDataDir = "CLAWMEM_DATA_DIR"
	EnvConfig  = "CLAWMEM_CONFIG"
)

// DefaultDataDir is $CLAWMEM_DATA_DIR, else ~/.clawmem.
func DefaultDataDir() string {
	if d := os.Getenv(EnvDataDir); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".clawmem"
	}
	return filepath.Join(home, ".clawmem")
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

func (c *Config) applyDefaults() {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir()
	}
	c.DataDir = expandHome(c.DataDir)
	if c.DBPath == "" {
		c.DBPath = filepath.Join(c.DataDir, "store")
	}
	c.DBPath = expandHome(c.DBPath)
	c.Embedding.applyDefaults()
	c.Retrieval.applyDefaults()
	if c.Scopes.Default == "" {
		c.Scopes.Default = "global"
	}
	if _, ok := c.Scopes.Definitions["global"]; !ok {
		if c.Scopes.Definitions == nil {
			c.Scopes.Definitions = map[string]scopes.Definition{}
		}
		c.Scopes.Definitions["global"] = scopes.Definition{Description: "Shared knowledge"}
	}
	if c.Store.Index == "" {
		c.Store.Index = "auto"
	}
	if c.AutoCapture == nil {
		on := true
		c.AutoCapture = &on
	}
	if c.CaptureMaxChars == 0 {
		c.CaptureMaxChars = 500
	}
	if c.SessionMemory.MessageCount == 0 {
		c.SessionMemory.MessageCount = distill.DefaultSummaryMessages
	}
	if c.Secrets.Mode == "" {
		c.Secrets.Mode = string(redact.ModeRedact)
	}
	if c.NATS.Replicas == 0 {
		c.NATS.Replicas = 1
	}
	if c.NATS.Partitions == 0 {
		c.NATS.Partitions = schemas.DefaultPartitions
	}
	if c.NATS.Port == 0 {
		c.NATS.Port = 4244
	}
	if c.Ingest.Addr == "" {
		c.Ingest.Addr = "127.0.0.1:7433"
	}
	if c.UI.Listen == "" {
		c.UI.Listen = "127.0.0.1:7434"
	}
	if c.Watch.Enabled == nil {
		on := true
		c.Watch.Enabled = &on
	}
	if c.Watch.StateDir == "" {
		c.Watch.StateDir, _ = distill.DefaultStateDir()
	}
	c.Watch.StateDir = expandHome(c.Watch.StateDir)
	c.Distill.applyDefaults()
	x := &c.SmartExtraction
	if x.Enabled == nil {
		on := true
		x.Enabled = &on
	}
	if x.TokensPerAgentPerHour == 0 {
		x.TokensPerAgentPerHour = 200_000
	}
	if x.Parallelism == 0 {
		x.Parallelism = 4
	}
	if x.Similar == 0 {
		x.Similar = 5
	}
	if x.TimeoutSeconds == 0 {
		x.TimeoutSeconds = 30
	}
	cj := &c.Jobs.Consolidate
	if cj.Schedule == "" {
		cj.Schedule = "@daily"
	}
	if cj.MergeMin == 0 {
		cj.MergeMin = 0.90
	}
	if cj.ArchiveHalfLifeDays == 0 {
		cj.ArchiveHalfLifeDays = 180
	}
	for _, r := range []struct {
		age *string
		def string
	}{{&c.Streams.Events.MaxAge, "7d"}, {&c.Streams.Transcripts.MaxAge, "30d"}, {&c.Streams.DLQ.MaxAge, "30d"}} {
		if *r.age == "" {
			*r.age = r.def
		}
	}
	b := &c.Jobs.Backup
	if b.Schedule == "" {
		b.Schedule = "@daily"
	}
	if b.Keep == 0 {
		b.Keep = 7
	}
	if b.Dir == "" {
		b.Dir = filepath.Join(c.DataDir, "backups")
	}
	b.Dir = expandHome(b.Dir)
}

// applyDefaults picks the provider as engine/embed does, except that a
// model alone (the seed's configs name one and take the key from
// $OPENAI_API_KEY) means an OpenAI-compatible endpoint, not the local
// embedder.
func (e *Embedding) applyDefaults() {
	if e.Provider == "" {
		e.Provider = embed.ProviderLocal
		if e.APIKey != "" || e.BaseURL != "" || (e.Model != "" && e.Model != localModel) {
			e.Provider = embed.ProviderOpenAI
		}
	}
	if e.Model == "" {
		switch strings.ToLower(e.Provider) {
		case embed.ProviderLocal:
			e.Model = localModel
		case embed.ProviderOpenAI:
			e.Model = "text-embedding-3-small"
		}
	}
}

// localModel is engine/embed's local embedder, its only model.
const localModel = "local-lexical"

// applyDefaults gives Jina's rerank model and endpoint, the seed's
// DEFAULT_RETRIEVAL_CONFIG; other providers' defaults are engine/rerank's.
func (r *Retrieval) applyDefaults() {
	if r.RerankProvider == "" {
		r.RerankProvider = string(rerank.Jina)
	}
	if strings.EqualFold(r.RerankProvider, string(rerank.Jina)) {
		if r.RerankModel == "" {
			r.RerankModel = "jina-reranker-v3"
		}
		if r.RerankEndpoint == "" {
			r.RerankEndpoint = "https://api.jina.ai/v1/rerank"
		}
	}
}

// applyDefaults spells out distill's own defaults, so that show lists them.
func (d *Distill) applyDefaults() {
	if d.TimeoutSeconds == 0 {
		d.TimeoutSeconds = int(distill.DefaultLLMTimeout / time.Second)
	}
	if d.MapChunkChars == 0 {
		d.MapChunkChars = distill.DefaultMapChunkChars
	}
	if d.MapOverlapMsgs == 0 {
		d.MapOverlapMsgs = distill.DefaultMapOverlapMsgs
	}
	if d.MaxFinal == nil {
		n := distill.DefaultMaxFinal
		d.MaxFinal = &n
	}
	if d.Parallelism == 0 {
		d.Parallelism = distill.DefaultParallelism
	}
	if d.Workers == 0 {
		d.Workers = 2
	}
	if d.Schedule == "" {
		d.Schedule = "@hourly"
	}
	if d.IdleMinutes == 0 {
		d.IdleMinutes = 30
	}
	if len(d.Agents) == 0 {
		for a := range strings.SplitSeq(os.Getenv("OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS"), ",") {
			if a = strings.TrimSpace(a); a != "" {
				d.Agents = append(d.Agents, a)
			}
		}
	}
	if d.Agents == nil {
		d.Agents = []string{} // every agent; shown as [] rather than null
	}
}

// EmbedConfig is the embedder's configuration.
func (c *Config) EmbedConfig() embed.Config {
	e := c.Embedding
	return embed.Config{
		Provider: e.Provider, APIKey: e.APIKey, BaseURL: e.BaseURL, Model: e.Model, Dimensions: e.Dimensions,
		TaskQuery: e.TaskQuery, TaskPassage: e.TaskPassage, Normalized: e.Normalized, Timeout: 30 * time.Second,
	}
}

// LLMConfig is the distillation model's configuration.
func (c *Config) LLMConfig() distill.LLMConfig {
	d := c.Distill
	return distill.LLMConfig{Provider: d.Provider, Model: d.Model, APIKey: d.APIKey, BaseURL: d.BaseURL,
		Timeout: time.Duration(d.TimeoutSeconds) * time.Second, JSONSchema: d.JSONSchema}
}

// DistillConfig is the map-reduce's configuration.
func (c *Config) DistillConfig() distill.Config {
	d := c.Distill
	maxFinal := 0 // distill's default, 20
	if d.MaxFinal != nil {
		maxFinal = *d.MaxFinal
		if maxFinal == 0 {
			maxFinal = -1 // distill's "none"
		}
	}
	return distill.Config{MapChunkChars: d.MapChunkChars, MapOverlapMsgs: d.MapOverlapMsgs, MaxFinal: maxFinal,
		Parallelism: d.Parallelism, MaxTokens: d.MaxTokens, LLMReduce: d.LLMReduce, CaptureMaxChars: c.CaptureMaxChars,
		Secrets: c.SecretsMode()}
}

// IndexOptions is the vector index's configuration.
func (c *Config) IndexOptions() vecindex.Options {
	o := vecindex.Options{NList: c.Store.NList, NProbe: c.Store.NProbe}
	if c.Store.Memory == "int8" {
		o.Memory = vecindex.Int8
	}
	switch c.Store.Index {
	case "approximate":
		o.Mode = vecindex.IVF
	case "auto":
		o.Mode, o.ExactBelow = vecindex.IVF, AutoExactBelow
	}
	return o
}

// AutoExactBelow is where index "auto" turns approximate. Below it an exact
// scan costs a few milliseconds at most; above it every duplicate check of
// a capture would too (≈7 ms each at 100k × 384), which caps capture far
// below 1,000 memories/s, while IVF answers in ~1 ms with recall@10 ≈ 0.998.
const AutoExactBelow = 20_000

// Reranker builds the cross-encoder client, or nil when the pipeline
// needs none: rerank is not cross-encoder, or no key is configured for a
// provider that needs one (retrieval then uses the cosine fallback).
func (c *Config) Reranker() (rerank.Reranker, error) {
	r := c.Retrieval
	if r.Rerank != retrieve.RerankCrossEncoder {
		return nil, nil
	}
	if r.RerankAPIKey == "" && !strings.EqualFold(r.RerankProvider, string(rerank.TEI)) {
		return nil, nil
	}
	return rerank.New(rerank.Config{Provider: rerank.Provider(r.RerankProvider), Endpoint: r.RerankEndpoint, APIKey: r.RerankAPIKey, Model: r.RerankModel})
}
