// Package config is clawmem's configuration tree: the keys of the seed
// plugin's config object (embedding.*, dbPath, retrieval.*, ...) plus
// clawmem's own, loaded from a JSON file with defaults applied.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/engine/rerank"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/engine/vecindex"
)

// Config is the whole configuration.
type Config struct {
	// DataDir holds everything clawmem writes: the store, NATS data,
	// backups. Default ~/.clawmem.
	DataDir string `json:"dataDir,omitempty"`
	// DBPath is the store's directory. Default <dataDir>/store.
	DBPath    string        `json:"dbPath,omitempty"`
	Embedding Embedding     `json:"embedding"`
	Store     Store         `json:"store"`
	Retrieval Retrieval     `json:"retrieval"`
	Scopes    scopes.Config `json:"scopes"`

	AutoCapture           *bool         `json:"autoCapture,omitempty"` // default true
	AutoRecall            bool          `json:"autoRecall,omitempty"`
	CaptureAssistant      bool          `json:"captureAssistant,omitempty"`
	CaptureMaxChars       int           `json:"captureMaxChars,omitempty"` // 100..10000, default 500
	EnableManagementTools bool          `json:"enableManagementTools,omitempty"`
	SessionMemory         SessionMemory `json:"sessionMemory"`

	NATS    NATS    `json:"nats"`
	Ingest  Ingest  `json:"ingest"`
	Distill Distill `json:"distill"`
	Watch   Watch   `json:"watch"`
}

// Distill configures session distillation: the LLM (none: the extractive,
// rule-based distiller), the map-reduce, the distill worker and the
// scheduled cursor distiller.
type Distill struct {
	// Provider is gemini, openai (any OpenAI-compatible chat endpoint) or
	// empty for none.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	APIKey   string `json:"apiKey,omitempty"` // ${ENV} expanded
	BaseURL  string `json:"baseURL,omitempty"`
	// TimeoutSeconds bounds one LLM call (default 60).
	TimeoutSeconds int `json:"timeoutSeconds,omitempty"`
	// JSONSchema sends the strict json_schema response format (openai).
	JSONSchema     bool `json:"jsonSchema,omitempty"`
	MapChunkChars  int  `json:"mapChunkChars,omitempty"`  // default 12000
	MapOverlapMsgs int  `json:"mapOverlapMsgs,omitempty"` // default 10
	MaxFinal       *int `json:"maxFinal,omitempty"`       // 0..20 (0: store none), default 20
	Parallelism    int  `json:"parallelism,omitempty"`    // concurrent map calls, default 4
	MaxTokens      int  `json:"maxTokens,omitempty"`      // per-session token budget, 0 = none
	LLMReduce      bool `json:"llmReduce,omitempty"`
	// Workers is how many sessions are distilled at once (default 2).
	Workers int `json:"workers,omitempty"`
	// Schedule is the cursor distiller's cron spec (default @hourly;
	// "off" disables it).
	Schedule string `json:"schedule,omitempty"`
	// IdleMinutes: a session must be quiet this long before the cursor
	// distiller takes its new messages (default 30).
	IdleMinutes int `json:"idleMinutes,omitempty"`
	// Agents is the cursor distiller's allowlist (empty, "*" or "all":
	// every agent); $OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS also sets it.
	Agents []string `json:"agents,omitempty"`
}

// Watch is the session-file watcher.
type Watch struct {
	// Enabled runs the watcher in `clawmem up` (default true).
	Enabled *bool `json:"enabled,omitempty"`
	// StateDir is OpenClaw's state directory (default $OPENCLAW_STATE_DIR,
	// else ~/.openclaw).
	StateDir string `json:"stateDir,omitempty"`
}

// SessionMemory is the seed's sessionMemory block.
type SessionMemory struct {
	Enabled      bool `json:"enabled,omitempty"`
	MessageCount int  `json:"messageCount,omitempty"`
}

// NATS says where the pipeline's NATS is.
type NATS struct {
	// URL of an external server or cluster; empty runs one embedded.
	URL string `json:"url,omitempty"`
	// Port of the embedded server (default 4244, not 4222, so a system
	// NATS keeps its port; -1 picks a free one).
	Port int `json:"port,omitempty"`
	// Credentials is a .creds file for an external server.
	Credentials string `json:"credentials,omitempty"`
}

// Ingest is the hook ingest HTTP endpoint.
type Ingest struct {
	Addr  string `json:"addr,omitempty"`  // default 127.0.0.1:7433
	Token string `json:"token,omitempty"` // bearer token; required off loopback
}

// Retrieval is the seed's retrieval.* block: the pipeline's knobs plus the
// cross-encoder's endpoint.
type Retrieval struct {
	retrieve.Config
	RerankAPIKey   string `json:"rerankApiKey,omitempty"`
	RerankModel    string `json:"rerankModel,omitempty"`
	RerankEndpoint string `json:"rerankEndpoint,omitempty"`
	RerankProvider string `json:"rerankProvider,omitempty"`
}

// Embedding is the seed's embedding.* block, plus provider.
type Embedding struct {
	Provider    string `json:"provider,omitempty"`
	APIKey      string `json:"apiKey,omitempty"`
	Model       string `json:"model,omitempty"`
	BaseURL     string `json:"baseURL,omitempty"`
	Dimensions  int    `json:"dimensions,omitempty"`
	TaskQuery   string `json:"taskQuery,omitempty"`
	TaskPassage string `json:"taskPassage,omitempty"`
	Normalized  *bool  `json:"normalized,omitempty"`
}

// Store configures the store backend and its vector index.
type Store struct {
	// Index is "auto" (default: exact below AutoExactBelow memories, then
	// approximate), "exact" or "approximate" (IVF with exact re-scoring).
	Index  string `json:"index,omitempty"`
	NList  int    `json:"nlist,omitempty"`
	NProbe int    `json:"nprobe,omitempty"`
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

// Load reads path (or, when empty, $CLAWMEM_CONFIG, else
// <dataDir>/config.json if it exists) and applies defaults. dataDir, when
// non-empty, overrides the file's dataDir.
func Load(path, dataDir string) (*Config, error) {
	c := &Config{Retrieval: Retrieval{Config: retrieve.DefaultConfig()}}
	explicit := path != ""
	if path == "" {
		path = os.Getenv(EnvConfig)
		explicit = path != ""
	}
	if path == "" {
		dir := dataDir
		if dir == "" {
			dir = DefaultDataDir()
		}
		path = filepath.Join(dir, "config.json")
	}
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := decode(raw, c); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
	case errors.Is(err, os.ErrNotExist) && !explicit:
	default:
		return nil, fmt.Errorf("read config: %w", err)
	}
	if dataDir != "" {
		c.DataDir = dataDir
	}
	c.applyDefaults()
	return c, c.Validate()
}

func decode(raw []byte, c *Config) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return err
	}
	return nil
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
		c.SessionMemory.MessageCount = 15
	}
	if c.NATS.Port == 0 {
		c.NATS.Port = 4244
	}
	if c.Ingest.Addr == "" {
		c.Ingest.Addr = "127.0.0.1:7433"
	}
	if c.Watch.Enabled == nil {
		on := true
		c.Watch.Enabled = &on
	}
	if c.Watch.StateDir == "" {
		c.Watch.StateDir, _ = distill.DefaultStateDir()
	}
	c.Watch.StateDir = expandHome(c.Watch.StateDir)
	if c.Distill.Schedule == "" {
		c.Distill.Schedule = "@hourly"
	}
	if c.Distill.IdleMinutes == 0 {
		c.Distill.IdleMinutes = 30
	}
	if len(c.Distill.Agents) == 0 {
		for a := range strings.SplitSeq(os.Getenv("OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS"), ",") {
			if a = strings.TrimSpace(a); a != "" {
				c.Distill.Agents = append(c.Distill.Agents, a)
			}
		}
	}
}

// Validate checks values that defaults cannot fix.
func (c *Config) Validate() error {
	if err := c.Retrieval.Config.Validate(); err != nil {
		return err
	}
	switch c.Store.Index {
	case "auto", "exact", "approximate":
	default:
		return fmt.Errorf("store.index is %q: want auto, exact or approximate", c.Store.Index)
	}
	if c.CaptureMaxChars < 100 || c.CaptureMaxChars > 10000 {
		return fmt.Errorf("captureMaxChars is %d: allowed range 100..10000", c.CaptureMaxChars)
	}
	d := c.Distill
	switch strings.ToLower(d.Provider) {
	case "", "none", "gemini", "openai":
	default:
		return fmt.Errorf("distill.provider is %q: want gemini, openai or empty", d.Provider)
	}
	if d.MaxFinal != nil && (*d.MaxFinal < 0 || *d.MaxFinal > 20) {
		return fmt.Errorf("distill.maxFinal is %d: allowed range 0..20", *d.MaxFinal)
	}
	if d.MapChunkChars < 0 || d.MapOverlapMsgs < 0 || d.Parallelism < 0 || d.MaxTokens < 0 || d.Workers < 0 || d.TimeoutSeconds < 0 || d.IdleMinutes < 0 {
		return errors.New("distill: mapChunkChars, mapOverlapMsgs, parallelism, maxTokens, workers, timeoutSeconds and idleMinutes must not be negative")
	}
	if c.Embedding.Dimensions < 0 {
		return fmt.Errorf("embedding.dimensions is %d: want a positive number", c.Embedding.Dimensions)
	}
	return nil
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
		Parallelism: d.Parallelism, MaxTokens: d.MaxTokens, LLMReduce: d.LLMReduce, CaptureMaxChars: c.CaptureMaxChars}
}

// IndexOptions is the vector index's configuration.
func (c *Config) IndexOptions() vecindex.Options {
	o := vecindex.Options{NList: c.Store.NList, NProbe: c.Store.NProbe}
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
	key, err := envsubst.Expand(r.RerankAPIKey)
	if err != nil {
		return nil, fmt.Errorf("retrieval.rerankApiKey: %w", err)
	}
	if key == "" && r.RerankProvider != string(rerank.TEI) {
		return nil, nil
	}
	endpoint, err := envsubst.Expand(r.RerankEndpoint)
	if err != nil {
		return nil, fmt.Errorf("retrieval.rerankEndpoint: %w", err)
	}
	return rerank.New(rerank.Config{Provider: rerank.Provider(r.RerankProvider), Endpoint: endpoint, APIKey: key, Model: r.RerankModel})
}
