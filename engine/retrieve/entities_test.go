package retrieve

import (
	"math"
	"slices"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"Liesel: Yes, Dierenkliniek Ter Leie, and Anouk is still my boss.", []string{"Dierenkliniek Ter Leie", "Anouk"}},
		{"Dario: Party news: I booked Masseria Le Due Querce, near Polignano.", []string{"Masseria Le Due Querce", "Polignano"}},
		{"Femke's brother Bram plays the euphonium in De Reiger.", []string{"Femke", "Bram", "De Reiger"}},
		{"Something big happened. Wouter offered me a job!", nil},                       // sentence starts are not names
		{"we moved to München last May, Jürgen says hi", []string{"München", "Jürgen"}}, // "may" is a stop word
		{"i think I like it. The end", nil},
		{"", nil},
		{"Mara: ok", nil},
		{"met \"Kofi\" (the chef) at Sankofa", []string{"Kofi", "Sankofa"}},
	} {
		if got := Names(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Names(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func FuzzNames(f *testing.F) {
	f.Add("Liesel: Yes, Dierenkliniek Ter Leie, and Anouk is still my boss.")
	f.Add("Femke’s \xff brother")
	f.Fuzz(func(t *testing.T, text string) {
		for _, n := range Names(text) {
			if n == "" {
				t.Fatalf("empty name from %q", text)
			}
		}
	})
}

// A name a recalled memory gives and the query does not brings in the
// memory naming it that is closest to the query, below the hit; names the
// query gives, other scopes, a direct query and entityHits 0 bring none.
func TestEntityExpansion(t *testing.T) {
	s := seedStore(t,
		tm{key: 1, text: "Sanne feeds the cat; Anouk showed her how to give his pills", cos: 0.8, scope: "global"},
		tm{key: 2, text: "At work it is busy, and Anouk is still my boss", cos: 0.3, scope: "global"},
		tm{key: 3, text: "Lunch with Anouk was long", cos: 0.1, scope: "global"},
		tm{key: 4, text: "Anouk from the other agent", cos: 0.9, scope: "agent:b"},
		tm{key: 5, text: "The weather was grey all week", cos: 0.2, scope: "global"},
	)
	cfg := DefaultConfig()
	cfg.NeighborHits = 0
	cfg.EntityHits = 3
	q := Query{Text: "who taught the cat sitter about the pills", Vector: queryVec(), Limit: 3, Scopes: engine.InScopes("global")}
	res := retrieve(t, newRetriever(t, s, cfg), q)
	if len(res.Candidates) < 2 || keyOf(res.Candidates[0].Memory.ID) != 1 || keyOf(res.Candidates[1].Memory.ID) != 2 {
		t.Fatalf("expansion: %v", keys(res))
	}
	hit, named := res.Candidates[0], res.Candidates[1]
	if named.Sources.Entity != "Anouk" || math.Abs(named.Score-hit.Score*cfg.EntityFactor) > 0.02 {
		t.Fatalf("named %+v of hit %.3f", named.Sources, hit.Score)
	}
	for _, c := range res.Candidates {
		if k := keyOf(c.Memory.ID); k == 4 || k == 3 && c.Sources.Entity != "" {
			t.Fatalf("memory %d brought in by name (other scope, or not the closest): %v", k, keys(res))
		}
	}
	for _, tc := range []struct {
		name string
		q    Query
		cfg  func(*Config)
	}{
		{"the query names it", Query{Text: "what did Anouk show about the pills", Vector: queryVec(), Limit: 3, Scopes: q.Scopes}, nil},
		{"direct", Query{Text: q.Text, Vector: queryVec(), Limit: 3, Scopes: q.Scopes, Direct: true}, nil},
		{"off", q, func(c *Config) { c.EntityHits = 0 }},
		{"category", Query{Text: q.Text, Vector: queryVec(), Limit: 3, Scopes: q.Scopes, Category: schemas.CategoryDecision}, nil},
	} {
		c := cfg
		if tc.cfg != nil {
			tc.cfg(&c)
		}
		for _, cand := range retrieve(t, newRetriever(t, s, c), tc.q).Candidates {
			if cand.Sources.Entity != "" {
				t.Errorf("%s: memory %d brought in by name", tc.name, keyOf(cand.Memory.ID))
			}
		}
	}
}
