//go:build lancedb

package lancestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/lancedb/lancedb-go/pkg/contracts"

	"github.com/clawmem/clawmem/schemas"
)

// OpenLegacy opens the memories table a plugin left at uri for reading:
// memory-lancedb's (~/.openclaw/memory/lancedb: createdAt, no scope or
// metadata) or memory-lancedb-pro's (~/.openclaw/memory/lancedb-pro).
// Copy moves its memories into a store. The plugin should not be writing
// to the table meanwhile.
func OpenLegacy(ctx context.Context, uri string) (Source, error) {
	if !IsURI(uri) {
		if _, err := os.Stat(uri); err != nil {
			return nil, fmt.Errorf("open plugin database: %w", err)
		}
	}
	conn, err := connect(ctx, uri, StorageOptions{})
	if err != nil {
		return nil, err
	}
	src, err := openSource(ctx, conn, uri)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return src, nil
}

func openSource(ctx context.Context, conn contracts.IConnection, uri string) (*source, error) {
	names, err := conn.TableNames(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(names, TableName) {
		return nil, fmt.Errorf("%s has no %s table: it is not a memory-lancedb or memory-lancedb-pro database", uri, TableName)
	}
	tbl, err := conn.OpenTable(ctx, TableName)
	if err != nil {
		return nil, err
	}
	schema, err := tbl.Schema(ctx)
	if err == nil {
		var lay layout
		if lay, err = classify(columnsOf(schema)); err == nil {
			return &source{conn: conn, tbl: tbl, lay: lay}, nil
		}
	}
	tbl.Close()
	return nil, err
}

// source reads a plugin's table.
type source struct {
	conn contracts.IConnection
	tbl  contracts.ITable
	lay  layout
}

// sourcePage is how many rows one read of a source returns.
const sourcePage = 500

func (s *source) Plugin() string  { return s.lay.plugin }
func (s *source) Dimensions() int { return s.lay.dim }

func (s *source) Count(ctx context.Context) (int, error) {
	n, err := s.tbl.Count(ctx)
	return int(n), err
}

// Iterate pages through the table in its scan order, which holds while
// nothing writes to it. Paging by offset rather than by id keeps ids out
// of SQL: a plugin's table may hold ids clawmem would not write.
func (s *source) Iterate(ctx context.Context, fn func(schemas.Memory) error) error {
	for offset := 0; ; offset += sourcePage {
		if err := ctx.Err(); err != nil {
			return err
		}
		limit, off := sourcePage, offset
		rows, err := s.tbl.Select(ctx, contracts.QueryConfig{Limit: &limit, Offset: &off})
		if err != nil {
			return fmt.Errorf("read the %s table: %w", s.lay.plugin, err)
		}
		for _, r := range rows {
			m, err := rowToMemory(r, s.lay.timeColumn)
			if err != nil {
				return err
			}
			if isPlaceholder(m.ID) || strings.HasSuffix(m.ID, tombSuffix) {
				continue
			}
			if err := fn(m); err != nil {
				return err
			}
		}
		if len(rows) < sourcePage {
			return nil
		}
	}
}

func (s *source) Close() error { return errors.Join(s.tbl.Close(), s.conn.Close()) }
