// Package storeopen opens the memory store a resolved configuration
// describes (its backend, at DBPath, with the embedder's dimensions) and
// the engine on it, and says how that store is backed up. It sits below
// node, which runs the store as the writer's or a replica's, and client,
// which opens it in process when no clawmem runs: a front end that opens
// a store then links no server.
package storeopen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/lancestore"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/workers/jobs"
)

// EngineStore is the store as Engine's callers use it.
type EngineStore interface {
	engine.Store
	// Len is the number of memories stored.
	Len() int
}

// Engine builds the whole engine on the configured store. The caller
// closes the returned store.
func Engine(ctx context.Context, cfg *config.Config, log *slog.Logger) (*memory.Engine, EngineStore, error) {
	return openEngine(ctx, cfg, log, options{})
}

// WriterLockWait is how long the writer of `clawmem up` waits for a
// command that holds the store for a moment (one that started before the
// instance could be seen) to let it go.
var WriterLockWait = 5 * time.Second

// WriterEngine is Engine for the writer role: it waits up to
// WriterLockWait for the store's lock, saying so.
func WriterEngine(ctx context.Context, cfg *config.Config, log *slog.Logger) (*memory.Engine, EngineStore, error) {
	return openEngine(ctx, cfg, log, options{lockWait: WriterLockWait})
}

// ReplicaEngine builds the engine of a query replica: on a SQLite store
// (at dbPath) that the memory log fills and that logs nothing of its own.
func ReplicaEngine(ctx context.Context, cfg *config.Config, log *slog.Logger) (*memory.Engine, *sqlitestore.Store, error) {
	if cfg.Store.Backend == "lancedb" {
		return nil, nil, errors.New("a query replica keeps its copy in SQLite: store.backend lancedb has no memory log")
	}
	eng, st, err := openEngine(ctx, cfg, log, options{replica: true})
	if err != nil {
		return nil, nil, err
	}
	return eng, st.(*sqlitestore.Store), nil
}

// options say how openEngine opens the store.
type options struct {
	// replica: a query replica's store, which logs no changes.
	replica  bool
	lockWait time.Duration
}

func openEngine(ctx context.Context, cfg *config.Config, log *slog.Logger, o options) (*memory.Engine, EngineStore, error) {
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
	return memory.New(st, emb, ret, sm, memory.WithSecrets(cfg.SecretsMode()),
		memory.WithRecallCache(cfg.Retrieval.RecallCache, cfg.Retrieval.RecallCacheTTL())), st, nil
}

// Store opens the configured backend: SQLite, or LanceDB, which a build
// without -tags lancedb refuses with lancestore.ErrNotBuilt.
func Store(ctx context.Context, cfg *config.Config, dim int) (EngineStore, error) {
	return openStore(ctx, cfg, dim, options{}, nil)
}

func openStore(ctx context.Context, cfg *config.Config, dim int, o options, log *slog.Logger) (EngineStore, error) {
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
		so.OnLayout = func(rows int64) func(time.Duration, error) {
			log.Info("laying out the memories table anew, once (a store made before this version); at a million memories this takes minutes", "memories", rows)
			return func(took time.Duration, err error) {
				if err != nil {
					log.Warn("the memories table keeps its old layout, which works but reads slower; the next start tries again", "err", err, "took", took)
					return
				}
				log.Info("memories table laid out", "memories", rows, "took", took.Round(time.Millisecond))
			}
		}
	}
	st, err := sqlitestore.Open(ctx, cfg.DBPath, so)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Dimensions is the configured embedder's vector size.
func Dimensions(cfg *config.Config) (int, error) {
	emb, err := embed.New(cfg.EmbedConfig())
	if err != nil {
		return 0, fmt.Errorf("embedding: %w", err)
	}
	return emb.Dimensions(), nil
}

// BackupConfig is the backup job's configuration (jobs.backup), the same
// for the writer's scheduled backups and a direct one; dir, when set,
// replaces the configured directory.
func BackupConfig(cfg *config.Config, dir string) jobs.BackupConfig {
	b := cfg.Jobs.Backup
	bc := jobs.BackupConfig{Dir: b.Dir, Schedule: b.Schedule, Keep: b.Keep, WithVectors: b.WithVectors}
	if dir != "" {
		bc.Dir = dir
	}
	if b.Schedule == "off" {
		bc.FirstDelay = -1
	}
	return bc
}
