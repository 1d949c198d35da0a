package lancestore

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/clawmem/clawmem/schemas"
)

// kind is what clawmem needs to know of a column's Arrow type.
type kind int

const (
	kindOther  kind = iota
	kindString      // utf8
	kindFloat       // float32 or float64
	kindInt         // any integer
	kindVector      // fixed-size list of float32
)

// column is one column of a table.
type column struct {
	name string
	kind kind
	dim  int // vector size, for kindVector
}

// proColumns is the table clawmem creates: memory-lancedb-pro's columns
// in its order, with the types its JavaScript writer gives them (numbers
// are float64), so either can open the other's table.
func proColumns(dim int) []column {
	return []column{
		{name: "id", kind: kindString},
		{name: "text", kind: kindString},
		{name: "vector", kind: kindVector, dim: dim},
		{name: "category", kind: kindString},
		{name: "scope", kind: kindString},
		{name: "importance", kind: kindFloat},
		{name: "timestamp", kind: kindFloat},
		{name: "metadata", kind: kindString},
	}
}

// layout is what a memories table holds.
type layout struct {
	// plugin names the table's writer: memory-lancedb-pro (clawmem writes
	// the same table) or memory-lancedb.
	plugin string
	dim    int
	// timeColumn is timestamp or, in memory-lancedb's table, createdAt;
	// empty when the table has neither.
	timeColumn string
	floatTime  bool
	// writable: the table has every column clawmem writes.
	writable bool
}

// The plugins a table can come from.
const (
	PluginPro    = "memory-lancedb-pro"
	PluginLegacy = "memory-lancedb"
)

// classify reads a table's columns: it needs id, text and a vector;
// memory-lancedb's table has createdAt and no scope or metadata.
func classify(cols []column) (layout, error) {
	byName := make(map[string]column, len(cols))
	for _, c := range cols {
		byName[c.name] = c
	}
	for _, name := range []string{"id", "text"} {
		if c, ok := byName[name]; !ok || c.kind != kindString {
			return layout{}, fmt.Errorf("the %s table has no %s text column: it is not a memory-lancedb or memory-lancedb-pro table", TableName, name)
		}
	}
	vec, ok := byName["vector"]
	if !ok || vec.kind != kindVector || vec.dim <= 0 {
		return layout{}, fmt.Errorf("the %s table has no vector column of float32: it is not a memory-lancedb or memory-lancedb-pro table", TableName)
	}
	l := layout{plugin: PluginPro, dim: vec.dim}
	if _, ok := byName["scope"]; !ok {
		l.plugin = PluginLegacy
	}
	for _, name := range []string{"timestamp", "createdAt"} {
		if c, ok := byName[name]; ok && (c.kind == kindFloat || c.kind == kindInt) {
			l.timeColumn, l.floatTime = name, c.kind == kindFloat
			break
		}
	}
	l.writable = true
	for _, want := range proColumns(vec.dim) {
		c, ok := byName[want.name]
		if !ok || (c.kind != want.kind && !(want.name == "timestamp" && c.kind == kindInt)) {
			l.writable = false
		}
	}
	return l, nil
}

// readColumns are the columns a read without vectors selects.
var readColumns = []string{"id", "text", "category", "scope", "importance", "timestamp", "metadata"}

// rowToMemory maps a row as lancedb-go returns it (decoded JSON: strings,
// float64 numbers, []any vectors, nil for NULL) to a memory, for both
// plugins' tables:
//
//   - the time is timestamp, or memory-lancedb's createdAt (epoch ms);
//   - a missing scope is global, a missing importance 0.7, a category
//     clawmem does not know other;
//   - metadata is a JSON object kept as a string; a string that is not one
//     is kept under legacyMetadata.
//
// The id is lower-cased but not checked: callers decide about rows whose
// id is not a UUID.
func rowToMemory(row map[string]any, timeColumn string) (schemas.Memory, error) {
	var m schemas.Memory
	id, ok := row["id"].(string)
	if !ok {
		return m, fmt.Errorf("%w: row without a string id", schemas.ErrInvalid)
	}
	m.ID = strings.ToLower(strings.TrimSpace(id))
	if m.Text, ok = row["text"].(string); !ok && row["text"] != nil {
		return m, fmt.Errorf("%w: memory %s: text is not a string", schemas.ErrInvalid, m.ID)
	}
	if v, present := row["vector"]; present && v != nil {
		vec, err := toVector(v)
		if err != nil {
			return m, fmt.Errorf("memory %s: %w", m.ID, err)
		}
		m.Vector = vec
	}
	if c, ok := row["category"].(string); ok && schemas.Category(c).Valid() {
		m.Category = schemas.Category(c)
	}
	m.Scope, _ = row["scope"].(string)
	m.Importance = schemas.DefaultImportance
	if v, ok := row["importance"].(float64); ok {
		m.Importance = v
	}
	if timeColumn != "" {
		if v, ok := row[timeColumn].(float64); ok && v > 0 && v <= maxExactMillis {
			m.Timestamp = int64(math.Round(v))
		}
	}
	m.Metadata = toMetadata(row["metadata"])
	m.Normalize()
	return m, nil
}

// toVector converts a decoded JSON array of numbers.
func toVector(v any) ([]float32, error) {
	xs, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: vector is not an array", schemas.ErrInvalid)
	}
	vec := make([]float32, len(xs))
	for i, x := range xs {
		f, ok := x.(float64)
		if !ok {
			return nil, fmt.Errorf("%w: vector component %d is %v", schemas.ErrInvalid, i, x)
		}
		vec[i] = float32(f)
	}
	return vec, nil
}

// toMetadata keeps a JSON object string as it is and wraps anything else.
func toMetadata(v any) json.RawMessage {
	s, _ := v.(string)
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if schemas.ValidateMetadata(json.RawMessage(s)) == nil {
		return json.RawMessage(s)
	}
	wrapped, err := json.Marshal(map[string]string{"legacyMetadata": s})
	if err != nil || schemas.ValidateMetadata(wrapped) != nil {
		return nil
	}
	return wrapped
}

// tombSuffix marks the old row of a memory being replaced (Store.replace).
// Such an id is no UUID, so no read returns the row.
const tombSuffix = "~replaced"

// isPlaceholder reports memory-lancedb-pro's table-creation row, which a
// crash between its insert and its delete can leave behind.
func isPlaceholder(id string) bool { return id == "__schema__" }
