//go:build !lancedb

package lancestore

import (
	"context"

	"github.com/clawmem/clawmem/engine"
)

// Store stands in for the LanceDB store in a build without the lancedb
// tag, so callers compile the same in both builds; Open never returns one.
type Store struct{ engine.Store }

// Len is the number of memories: none, there is no store.
func (*Store) Len() int { return 0 }

// Open fails with ErrNotBuilt: this build has no LanceDB backend.
func Open(context.Context, string, Options) (*Store, error) { return nil, ErrNotBuilt }

// OpenLegacy fails with ErrNotBuilt: this build cannot read LanceDB tables.
func OpenLegacy(context.Context, string) (Source, error) { return nil, ErrNotBuilt }
