// Package node builds and runs a clawmem node from a resolved
// configuration: the engine on its store, the distiller, the jobs, and the
// roles of the pipeline (store, query, capture, distill, ingest, watch).
// The command line hands everything to it; the workers and the engine know
// nothing of the configuration file.
package node

import (
	"fmt"
	"time"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/workers/lessons"
)

// NewDistiller builds the session distiller the config describes: the
// configured LLM, or the extractive distiller when there is none.
func NewDistiller(cfg *config.Config) (*distill.Distiller, error) {
	llm, err := distill.NewLLM(cfg.LLMConfig())
	if err != nil {
		return nil, fmt.Errorf("distill: %w", err)
	}
	emb, err := embed.New(cfg.EmbedConfig())
	if err != nil {
		return nil, fmt.Errorf("embedding: %w", err)
	}
	return distill.New(cfg.DistillConfig(), llm, emb), nil
}

// TranscriptConfig is the scheduled transcript distiller's configuration. Its
// scope rules are the configuration's (validated when it was loaded; rules
// that fail here fall back to the built-in ones, and the store's writers
// move what that routes elsewhere).
func TranscriptConfig(cfg *config.Config) lessons.TranscriptConfig {
	sm, _ := scopes.New(cfg.Scopes)
	return lessons.TranscriptConfig{Schedule: cfg.Distill.Schedule, Idle: time.Duration(cfg.Distill.IdleMinutes) * time.Minute,
		Agents: cfg.Distill.Agents, Partitions: cfg.NATS.Partitions, Scopes: sm}
}
