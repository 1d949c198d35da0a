package sqlitestore

import (
	"context"
	"database/sql"
	"sync"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// generations counts completed writes for engine.Store.WriteGeneration:
// one counter per scope and one for every write. A scope's generation
// only matters while it is unchanged, so a filter's is the sum of its
// scopes' counters: they only grow, so the sum changes whenever one does.
type generations struct {
	mu      sync.RWMutex
	byScope map[string]uint64
	all     uint64
}

// wrote counts one completed write to each of scopes (a scope named twice
// counts once). Writers call it after their commit and after the vector
// index holds the change, so a reader that sees the new count sees the
// write too.
func (g *generations) wrote(scopes ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byScope == nil {
		g.byScope = map[string]uint64{}
	}
	g.all++
	seen := make(map[string]bool, len(scopes))
	for _, s := range scopes {
		if s == "" {
			s = schemas.GlobalScope // a legacy row's, as ScopeFilter.Allows reads it
		}
		if !seen[s] {
			seen[s] = true
			g.byScope[s]++
		}
	}
}

func (g *generations) of(f engine.ScopeFilter) uint64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if f.All() {
		return g.all
	}
	var n uint64
	for _, s := range f.Scopes() {
		n += g.byScope[s]
	}
	return n
}

// WriteGeneration implements engine.Store: per scope, so a write to one
// agent's scope leaves the other agents' cached answers standing.
func (s *Store) WriteGeneration(f engine.ScopeFilter) uint64 { return s.gens.of(f) }

// scopeOfSeq reads, in tx, the scope of the memory at seq: what a delete
// that found it by id changes.
func scopeOfSeq(ctx context.Context, tx *sql.Tx, seq int64) (string, error) {
	var scope string
	err := tx.QueryRowContext(ctx, `SELECT scope FROM memories WHERE seq = ?`, seq).Scan(&scope)
	return scope, err
}
