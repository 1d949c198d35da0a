package memory

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/schemas"
)

// TestRecallKeyCoversOptions fails when RecallOptions or retrieve.Query
// gains a field: the recall cache's key must then say whether the answer
// depends on it (newRecallKey), and this list be brought up to date.
func TestRecallKeyCoversOptions(t *testing.T) {
	fields := func(v any) []string {
		var out []string
		for f := range reflect.TypeOf(v).Fields() {
			out = append(out, f.Name)
		}
		return out
	}
	// Scope is in the key as the filter it resolves to.
	if got, want := fields(RecallOptions{}), []string{"Limit", "Scope", "Category", "MinScore", "Direct", "History"}; !slices.Equal(got, want) {
		t.Errorf("RecallOptions has %v, the recall cache's key knows %v", got, want)
	}
	// Text and Scopes are the key's query and filter; Vector is the
	// query's embedding; a TextOnly (Fallback) answer is never kept.
	if got, want := fields(retrieve.Query{}), []string{"Text", "Vector", "Scopes", "Limit", "Category", "MinScore", "Direct", "History",
		"TextOnly", "Fallback"}; !slices.Equal(got, want) {
		t.Errorf("retrieve.Query has %v, the recall cache's key knows %v", got, want)
	}
}

// Every input that changes the answer changes the key, and nothing else.
func TestRecallKey(t *testing.T) {
	base := newRecallKey(engine.InScopes("agent:a", "global"), "my query", RecallOptions{})
	if newRecallKey(engine.InScopes("global", "agent:a", "global"), "my query", RecallOptions{Scope: "ignored: resolved"}) != base {
		t.Error("the same scopes in another order, or the unresolved scope, changed the key")
	}
	nan, zero := math.NaN(), 0.0
	for name, k := range map[string]recallKey{
		"scopes":        newRecallKey(engine.InScopes("agent:b", "global"), "my query", RecallOptions{}),
		"fewer scopes":  newRecallKey(engine.InScopes("global"), "my query", RecallOptions{}),
		"every scope":   newRecallKey(engine.AllScopes(), "my query", RecallOptions{}),
		"no scope":      newRecallKey(engine.InScopes(), "my query", RecallOptions{}),
		"query":         newRecallKey(engine.InScopes("agent:a", "global"), "my query ", RecallOptions{}),
		"limit":         newRecallKey(engine.InScopes("agent:a", "global"), "my query", RecallOptions{Limit: 3}),
		"category":      newRecallKey(engine.InScopes("agent:a", "global"), "my query", RecallOptions{Category: schemas.CategoryFact}),
		"min score 0":   newRecallKey(engine.InScopes("agent:a", "global"), "my query", RecallOptions{MinScore: &zero}),
		"min score NaN": newRecallKey(engine.InScopes("agent:a", "global"), "my query", RecallOptions{MinScore: &nan}),
		"direct":        newRecallKey(engine.InScopes("agent:a", "global"), "my query", RecallOptions{Direct: true}),
		"history":       newRecallKey(engine.InScopes("agent:a", "global"), "my query", RecallOptions{History: true}),
	} {
		if k == base {
			t.Errorf("%s: the key did not change", name)
		}
	}
	if a, b := newRecallKey(engine.AllScopes(), "q", RecallOptions{MinScore: &nan}), newRecallKey(engine.AllScopes(), "q", RecallOptions{MinScore: &nan}); a != b {
		t.Error("a NaN minimum score makes a key that never matches")
	}
}
