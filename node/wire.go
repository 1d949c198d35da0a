// Package node builds and runs a clawmem node from a resolved
// configuration: the engine on its store, the distiller, the jobs, and the
// roles of the pipeline (store, query, capture, distill, ingest, watch).
// The command line hands everything to it; the workers and the engine know
// nothing of the configuration file.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/lancestore"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/workers"
)

// OpenEngine builds the whole engine on the configured store. The caller
// closes the returned store.
func OpenEngine(ctx context.Context, cfg *config.Config, log *slog.Logger) (*memory.Engine, EngineStore, error) {
	return openEngine(ctx, cfg, log, openOptions{})
}

// StoreLockWait is how long the writer of `clawmem up` waits for a
// command that holds the store for a moment (one that started before the
// instance could be seen) to let it go.
var StoreLockWait = 5 * time.Second

// openWriterEngine is OpenEngine for the writer role: it waits up to
// StoreLockWait for the store's lock, saying so.
func openWriterEngine(ctx context.Context, cfg *config.Config, log *slog.Logger) (*memory.Engine, EngineStore, error) {
	return openEngine(ctx, cfg, log, openOptions{lockWait: StoreLockWait})
}

// openOptions say how openEngine opens the store.
type openOptions struct {
	// replica: a query replica's store, which logs no changes.
	replica  bool
	lockWait time.Duration
}

// OpenReplicaEngine builds the engine of a query replica: on a SQLite
// store (at dbPath) that the memory log fills and that logs nothing of
// its own.
func OpenReplicaEngine(ctx context.Context, cfg *config.Config, log *slog.Logger) (*memory.Engine, *sqlitestore.Store, error) {
	if cfg.Store.Backend == "lancedb" {
		return nil, nil, errors.New("a query replica keeps its copy in SQLite: store.backend lancedb has no memory log")
	}
	eng, st, err := openEngine(ctx, cfg, log, openOptions{replica: true})
	if err != nil {
		return nil, nil, err
	}
	return eng, st.(*sqlitestore.Store), nil
}

func openEngine(ctx context.Context, cfg *config.Config, log *slog.Logger, o openOptions) (*memory.Engine, EngineStore, error) {
	emb, err := embed.New(cfg.EmbedConfig())
	if err != nil {
		return nil, nil, fmt.Errorf("embedding: %w", err)
	}
	sm, err := scopes.New(cfg.Scopes)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range sm.Warnings() {
		log.Warn(w)
	}
	rr, err := cfg.Reranker()
	if err != nil {
		return nil, nil, err
	}
	st, err := openStore(ctx, cfg, emb.Dimensions(), o, log)
	if err != nil {
		return nil, nil, err
	}
	if ss, ok := st.(*sqlitestore.Store); ok {
		v := ss.Vectors()
		if v.Why != "" && v.From == "database" && !strings.HasPrefix(v.Why, "no segment") {
			log.Warn("vector segment not used; vectors loaded from the database", "memories", ss.Len(), "took", v.Took.Round(time.Millisecond), "why", v.Why)
		} else {
			log.Info("vectors loaded", "from", v.From, "memories", ss.Len(), "took", v.Took.Round(time.Millisecond))
		}
	}
	opts := []retrieve.Option{retrieve.WithLogger(log)}
	if rr != nil {
		opts = append(opts, retrieve.WithReranker(rr))
	}
	ret, err := retrieve.New(st, cfg.Retrieval.Config, opts...)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return memory.New(st, emb, ret, sm, memory.WithSecrets(cfg.SecretsMode())), st, nil
}

// EngineStore is the store as OpenEngine's callers use it.
type EngineStore interface {
	engine.Store
	// Len is the number of memories stored.
	Len() int
}

// OpenStore opens the configured backend: SQLite, or LanceDB, which a
// build without -tags lancedb refuses with lancestore.ErrNotBuilt.
func OpenStore(ctx context.Context, cfg *config.Config, dim int) (EngineStore, error) {
	return openStore(ctx, cfg, dim, openOptions{}, nil)
}

func openStore(ctx context.Context, cfg *config.Config, dim int, o openOptions, log *slog.Logger) (EngineStore, error) {
	if cfg.Store.Backend == "lancedb" {
		st, err := lancestore.Open(ctx, cfg.DBPath, lancestore.Options{Dimensions: dim, Storage: cfg.Store.StorageOptions})
		if err != nil {
			return nil, fmt.Errorf("store.backend lancedb: %w", err)
		}
		return st, nil
	}
	so := sqlitestore.Options{Dimensions: dim, Index: cfg.IndexOptions(), NoChangeLog: o.replica, LockWait: o.lockWait}
	if log != nil {
		so.OnLockWait = func(lock string, wait time.Duration) {
			log.Warn("the store is in use by another process (a clawmem command?); waiting for it to finish", "lock", lock, "upTo", wait)
		}
	}
	st, err := sqlitestore.Open(ctx, cfg.DBPath, so)
	if err != nil {
		return nil, err
	}
	return st, nil
}

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

// CursorConfig is the scheduled cursor distiller's configuration. Its
// scope rules are the configuration's (validated when it was loaded; rules
// that fail here fall back to the built-in ones, and the store's writers
// move what that routes elsewhere).
func CursorConfig(cfg *config.Config) workers.CursorConfig {
	sm, _ := scopes.New(cfg.Scopes)
	return workers.CursorConfig{Schedule: cfg.Distill.Schedule, Idle: time.Duration(cfg.Distill.IdleMinutes) * time.Minute,
		Agents: cfg.Distill.Agents, Partitions: cfg.NATS.Partitions, Scopes: sm}
}

// BackupConfig is the backup job's configuration; dir, when set, replaces
// the configured directory.
func BackupConfig(cfg *config.Config, dir string) workers.BackupConfig {
	b := cfg.Jobs.Backup
	bc := workers.BackupConfig{Dir: b.Dir, Schedule: b.Schedule, Keep: b.Keep, WithVectors: b.WithVectors}
	if dir != "" {
		bc.Dir = dir
	}
	if b.Schedule == "off" {
		bc.FirstDelay = -1
	}
	return bc
}

// Dimensions is the configured embedder's vector size.
func Dimensions(cfg *config.Config) (int, error) {
	emb, err := embed.New(cfg.EmbedConfig())
	if err != nil {
		return 0, fmt.Errorf("embedding: %w", err)
	}
	return emb.Dimensions(), nil
}
