package lancestore

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/schemas"
)

// legacyColumns is memory-lancedb's table as its JavaScript writer creates
// it.
var legacyColumns = []column{
	{name: "id", kind: kindString},
	{name: "text", kind: kindString},
	{name: "vector", kind: kindVector, dim: 4},
	{name: "importance", kind: kindFloat},
	{name: "category", kind: kindString},
	{name: "createdAt", kind: kindFloat},
}

func TestClassify(t *testing.T) {
	intTime := proColumns(4)
	intTime[6].kind = kindInt
	noMetadata := proColumns(4)[:7]
	for _, c := range []struct {
		name string
		cols []column
		want layout
	}{
		{"clawmem and memory-lancedb-pro", proColumns(1024),
			layout{plugin: PluginPro, dim: 1024, timeColumn: "timestamp", floatTime: true, writable: true}},
		{"memory-lancedb", legacyColumns,
			layout{plugin: PluginLegacy, dim: 4, timeColumn: "createdAt", floatTime: true}},
		{"integer timestamps", intTime,
			layout{plugin: PluginPro, dim: 4, timeColumn: "timestamp", writable: true}},
		{"no metadata column", noMetadata,
			layout{plugin: PluginPro, dim: 4, timeColumn: "timestamp", floatTime: true}},
	} {
		got, err := classify(c.cols)
		if err != nil || got != c.want {
			t.Errorf("%s: classify = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	for name, cols := range map[string][]column{
		"no id":             proColumns(4)[1:],
		"no vector":         {{name: "id", kind: kindString}, {name: "text", kind: kindString}},
		"float64 vector":    {{name: "id", kind: kindString}, {name: "text", kind: kindString}, {name: "vector", kind: kindOther}},
		"numeric text":      {{name: "id", kind: kindString}, {name: "text", kind: kindFloat}, {name: "vector", kind: kindVector, dim: 4}},
		"zero-size vectors": {{name: "id", kind: kindString}, {name: "text", kind: kindString}, {name: "vector", kind: kindVector}},
	} {
		if _, err := classify(cols); err == nil {
			t.Errorf("%s: classified", name)
		}
	}
}

func TestProColumnsMatchThePlugin(t *testing.T) {
	var names []string
	for _, c := range proColumns(8) {
		names = append(names, c.name)
	}
	want := []string{"id", "text", "vector", "category", "scope", "importance", "timestamp", "metadata"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("columns %v, want memory-lancedb-pro's %v", names, want)
	}
	for _, c := range readColumns {
		if c == "vector" {
			t.Fatal("reads without vectors select the vector")
		}
	}
}

func TestRowToMemory(t *testing.T) {
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	vec := []any{0.5, -0.25, 1.0, 0.0}
	for _, c := range []struct {
		name       string
		row        map[string]any
		timeColumn string
		want       schemas.Memory
	}{
		{"memory-lancedb-pro row", map[string]any{
			"id": id, "text": "I prefer dark mode", "vector": vec, "category": "preference", "scope": "agent:main",
			"importance": 0.9, "timestamp": 1.7e12, "metadata": `{"source":"manual"}`, "_distance": 0.1,
		}, "timestamp", schemas.Memory{
			ID: id, Text: "I prefer dark mode", Vector: []float32{0.5, -0.25, 1, 0}, Category: schemas.CategoryPreference,
			Scope: "agent:main", Importance: 0.9, Timestamp: 1700000000000, Metadata: []byte(`{"source":"manual"}`),
		}},
		{"memory-lancedb row: createdAt, no scope, no metadata", map[string]any{
			"id": strings.ToUpper(id), "text": "my dog is Rex", "vector": vec, "category": "fact",
			"importance": 0.7, "createdAt": 1.6e12,
		}, "createdAt", schemas.Memory{
			ID: id, Text: "my dog is Rex", Vector: []float32{0.5, -0.25, 1, 0}, Category: schemas.CategoryFact,
			Scope: "global", Importance: 0.7, Timestamp: 1600000000000, Metadata: []byte("{}"),
		}},
		{"NULLs and strays get defaults", map[string]any{
			"id": id, "text": "x", "vector": nil, "category": "opinion", "scope": nil, "importance": nil,
			"timestamp": nil, "metadata": "not json",
		}, "timestamp", schemas.Memory{
			ID: id, Text: "x", Category: schemas.CategoryOther, Scope: "global", Importance: 0.7,
			Metadata: []byte(`{"legacyMetadata":"not json"}`),
		}},
		{"columns left out of the read", map[string]any{"id": id, "scope": "custom:work", "category": "entity"}, "timestamp",
			schemas.Memory{ID: id, Category: schemas.CategoryEntity, Scope: "custom:work", Importance: 0.7, Metadata: []byte("{}")}},
		{"importance clamped, metadata array wrapped", map[string]any{
			"id": id, "text": "x", "importance": 3.0, "metadata": "[1,2]", "timestamp": 0.0,
		}, "timestamp", schemas.Memory{
			ID: id, Text: "x", Category: schemas.CategoryOther, Scope: "global", Importance: 1,
			Metadata: []byte(`{"legacyMetadata":"[1,2]"}`),
		}},
	} {
		got, err := rowToMemory(c.row, c.timeColumn)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
	for name, row := range map[string]map[string]any{
		"no id":          {"text": "x"},
		"numeric id":     {"id": 7.0, "text": "x"},
		"numeric text":   {"id": id, "text": 7.0},
		"null component": {"id": id, "text": "x", "vector": []any{1.0, nil}},
		"string vector":  {"id": id, "text": "x", "vector": "[1,2]"},
	} {
		if _, err := rowToMemory(row, "timestamp"); !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("%s: want ErrInvalid, got %v", name, err)
		}
	}
}
