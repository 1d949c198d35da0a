//go:build lancedb

package lancestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/lancedb/lancedb-go/pkg/contracts"
	"github.com/lancedb/lancedb-go/pkg/lancedb"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// Store implements engine.Store on a LanceDB table.
//
// lancedb-go v0.1.2 shapes it: every query returns rows as JSON, filters
// are SQL text (see escapeSQL), vector search ranks by L2 (clawmem
// re-ranks by cosine, see candidates), Update sets scalar columns only,
// and full-text queries are refused, so HasFullText reports false with it.
type Store struct {
	conn   contracts.IConnection
	tbl    contracts.ITable
	schema *arrow.Schema // the table's; writes follow it
	lay    layout
	fts    bool

	// mu makes every write — some are several LanceDB commits — one step
	// for this process's readers, and serialises writers so that the
	// checks a write makes (an id is free, a row exists) still hold when
	// it commits.
	mu     sync.RWMutex
	closed atomic.Bool
	// gen counts the writes this process made (WriteGeneration), each
	// after it finished and before its lock is let go, failed ones too:
	// a write of several commits may have made some of them.
	gen atomic.Uint64
}

var _ engine.Store = (*Store)(nil)

// chunkIDs is how many ids one IN (...) filter names.
const chunkIDs = 256

// Open opens (creating if needed) the memories table at uri: a local
// directory or a LanceDB URI such as s3://bucket/prefix.
func Open(ctx context.Context, uri string, o Options) (*Store, error) {
	if err := o.Storage.Validate(); err != nil {
		return nil, fmt.Errorf("storage options: %w", err)
	}
	if !IsURI(uri) {
		if err := os.MkdirAll(uri, 0o700); err != nil {
			return nil, fmt.Errorf("create store dir: %w", err)
		}
	}
	conn, err := connect(ctx, uri, o.Storage)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, conn, o)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

// connect opens a LanceDB connection with the object-store settings.
func connect(ctx context.Context, uri string, o StorageOptions) (contracts.IConnection, error) {
	var opts *contracts.ConnectionOptions
	if o != (StorageOptions{}) {
		for k, v := range o.s3Environment() {
			if err := os.Setenv(k, v); err != nil {
				return nil, fmt.Errorf("set %s: %w", k, err)
			}
		}
		s3 := &contracts.S3Config{}
		for _, f := range []struct {
			dst **string
			v   string
		}{
			{&s3.Endpoint, o.Endpoint}, {&s3.Region, o.Region}, {&s3.AccessKeyID, o.AccessKeyID},
			{&s3.SecretAccessKey, o.SecretAccessKey}, {&s3.SessionToken, o.SessionToken},
		} {
			if f.v != "" {
				*f.dst = &f.v
			}
		}
		storage := &contracts.StorageOptions{S3Config: s3}
		if o.AllowHTTP {
			storage.AllowHTTP = &o.AllowHTTP
		}
		opts = &contracts.ConnectionOptions{StorageOptions: storage}
	}
	return lancedb.Connect(ctx, uri, opts)
}

func open(ctx context.Context, conn contracts.IConnection, o Options) (*Store, error) {
	tbl, err := openOrCreate(ctx, conn, o.Dimensions)
	if err != nil {
		return nil, err
	}
	s := &Store{conn: conn, tbl: tbl}
	if err := s.init(ctx, o); err != nil {
		tbl.Close()
		return nil, err
	}
	return s, nil
}

// openOrCreate opens the memories table, creating it when missing.
func openOrCreate(ctx context.Context, conn contracts.IConnection, dim int) (contracts.ITable, error) {
	names, err := conn.TableNames(ctx)
	if err != nil {
		return nil, err
	}
	if slices.Contains(names, TableName) {
		return conn.OpenTable(ctx, TableName)
	}
	if dim <= 0 {
		return nil, errors.New("the store is new: set embedding.dimensions (or a model with known dimensions)")
	}
	as, err := arrowSchema(proColumns(dim))
	if err != nil {
		return nil, err
	}
	schema, err := lancedb.NewSchema(as)
	if err != nil {
		return nil, err
	}
	tbl, err := conn.CreateTable(ctx, TableName, schema)
	if err != nil {
		// Another process may have created it meanwhile (the plugins
		// allow for the same race).
		if t, oerr := conn.OpenTable(ctx, TableName); oerr == nil {
			return t, nil
		}
		return nil, err
	}
	return tbl, nil
}

func (s *Store) init(ctx context.Context, o Options) error {
	schema, err := s.tbl.Schema(ctx)
	if err != nil {
		return err
	}
	lay, err := classify(columnsOf(schema))
	switch {
	case err != nil:
		return err
	case lay.plugin == PluginLegacy:
		return ErrLegacyTable
	case !lay.writable:
		return fmt.Errorf("the %s table lacks columns clawmem writes (it has %s): open it with OpenLegacy and copy it instead",
			TableName, schema)
	case o.Dimensions > 0 && o.Dimensions != lay.dim:
		return &engine.DimensionError{Table: lay.dim, Config: o.Dimensions}
	}
	s.schema, s.lay = schema, lay
	if err := s.repair(ctx); err != nil {
		return fmt.Errorf("finish an interrupted update: %w", err)
	}
	s.fts = s.initFullText(ctx)
	return nil
}

// initFullText makes sure the text column has a full-text index and
// reports whether full-text queries work. lancedb-go v0.1.2 refuses every
// one ("Full-text search is not currently supported"), so with it
// retrieval runs vector-only, as memory-lancedb-pro does without an index.
func (s *Store) initFullText(ctx context.Context) bool {
	idx, err := s.tbl.GetAllIndexes(ctx)
	if err != nil {
		return false
	}
	if !slices.ContainsFunc(idx, func(i contracts.IndexInfo) bool { return slices.Contains(i.Columns, "text") }) {
		if err := s.tbl.CreateIndex(ctx, []string{"text"}, contracts.IndexTypeFts); err != nil {
			return false
		}
	}
	_, err = s.tbl.FullTextSearch(ctx, "text", "clawmem")
	return err == nil
}

// Dimensions implements engine.Store.
func (s *Store) Dimensions() int { return s.lay.dim }

// HasFullText implements engine.Store.
func (s *Store) HasFullText() bool { return s.fts }

// WriteGeneration implements engine.Store with one counter for every
// scope: any write changes every filter's generation. Writes by another
// process sharing the table are not counted.
func (s *Store) WriteGeneration(engine.ScopeFilter) uint64 { return s.gen.Load() }

// Len is the number of rows in the table (0 when it cannot be counted).
func (s *Store) Len() int {
	if s.check() != nil {
		return 0
	}
	n, err := s.tbl.Count(context.Background())
	if err != nil {
		return 0
	}
	return int(n)
}

// Close implements engine.Store.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.tbl.Close(), s.conn.Close())
}

func (s *Store) check() error {
	if s.closed.Load() {
		return engine.ErrClosed
	}
	return nil
}

// rows runs a plain query: every row matching where ("" for all), with
// the columns named (nil for all).
func (s *Store) rows(ctx context.Context, where string, columns []string) ([]map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := s.tbl.Select(ctx, contracts.QueryConfig{Columns: columns, Where: where})
	if err != nil {
		return nil, fmt.Errorf("query memories: %w", err)
	}
	return rows, nil
}

// memories maps rows, leaving out any that is not a memory (the plugin's
// placeholder, the old row of an update in progress).
func (s *Store) memories(rows []map[string]any) ([]schemas.Memory, error) {
	out := make([]schemas.Memory, 0, len(rows))
	for _, r := range rows {
		m, err := rowToMemory(r, s.lay.timeColumn)
		if err != nil {
			return nil, err
		}
		if schemas.IsUUID(m.ID) {
			out = append(out, m)
		}
	}
	return out, nil
}
