// Package storetest is the conformance suite every engine.Store backend
// passes. A backend's test calls Run with a function that opens its store in
// a directory.
package storetest

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// Opener opens (creating if needed) the backend's store in dir with the
// given vector dimensions.
type Opener func(t *testing.T, dir string, dim int) (engine.Store, error)

// Dim is the vector size the suite uses.
const Dim = 8

// Run runs the whole suite.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"AddGeneratesIDAndTimestamp", testAdd},
		{"ImportKeepsIDAndTimestamp", testImport},
		{"ImportDuplicateIsAtomic", testImportDuplicate},
		{"Has", testHas},
		{"ResolveAndPrefixes", testResolve},
		{"AmbiguousPrefix", testAmbiguous},
		{"Delete", testDelete},
		{"UpdateInPlace", testUpdate},
		{"BulkDelete", testBulkDelete},
		{"List", testList},
		{"ListFilters", testListFilters},
		{"Stats", testStats},
		{"AddedByDay", testAddedByDay},
		{"VectorSearch", testVectorSearch},
		{"VectorSearchScopeFilterInsideQuery", testVectorScopeFilter},
		{"LegacyEmptyScopeIsGlobal", testLegacyScope},
		{"TextSearch", testTextSearch},
		{"TextSearchSyntaxIsInert", testTextSearchSyntax},
		{"Iterate", testIterate},
		{"ReopenKeepsEverything", testReopen},
		{"DimensionMismatch", testDimensionMismatch},
		{"BadInput", testBadInput},
		{"ScopeIsolation", testScopeIsolation},
		{"Concurrent", testConcurrent},
		{"Closed", testClosed},
		{"History", testHistory},
		{"WriteGeneration", testWriteGeneration},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

func mustOpen(t *testing.T, open Opener, dir string) engine.Store {
	t.Helper()
	s, err := open(t, dir, Dim)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func fresh(t *testing.T, open Opener) engine.Store { return mustOpen(t, open, t.TempDir()) }

// Axis returns the unit vector along axis i (mod Dim).
func Axis(i int) []float32 {
	v := make([]float32, Dim)
	v[i%Dim] = 1
	return v
}

// Mix returns a unit vector between axes i and j, weight w on i.
func Mix(i, j int, w float64) []float32 {
	v := make([]float32, Dim)
	v[i%Dim] = float32(w)
	v[j%Dim] += float32(math.Sqrt(1 - w*w))
	return v
}

func mem(text, scope string, vec []float32) schemas.Memory {
	return schemas.Memory{Text: text, Scope: scope, Vector: vec, Category: schemas.CategoryFact, Importance: 0.7}
}

func add(t *testing.T, s engine.Store, ms ...schemas.Memory) []schemas.Memory {
	t.Helper()
	out, err := s.Add(context.Background(), ms...)
	if err != nil {
		t.Fatalf("add: %v", err)
	}
	return out
}

func id(n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n) }

var ctx = context.Background()

func count(t *testing.T, s engine.Store) int {
	t.Helper()
	st, err := s.Stats(ctx, engine.AllScopes())
	if err != nil {
		t.Fatal(err)
	}
	return st.Total
}
