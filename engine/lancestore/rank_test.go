package lancestore

import (
	"fmt"
	"math"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

func TestCandidates(t *testing.T) {
	for _, c := range []struct {
		limit    int
		filtered bool
		want     int
	}{
		{5, false, 10}, {5, true, 50}, {20, true, 200}, {50, true, 200}, {150, false, 200}, {300, true, 300}, {1, false, 2},
	} {
		if got := candidates(c.limit, c.filtered); got != c.want {
			t.Errorf("candidates(%d, %v) = %d, want %d", c.limit, c.filtered, got, c.want)
		}
	}
}

func TestUnitAndCosine(t *testing.T) {
	u := unit([]float32{3, 4})
	if math.Abs(float64(u[0])-0.6) > 1e-7 || math.Abs(float64(u[1])-0.8) > 1e-7 {
		t.Errorf("unit(3,4) = %v", u)
	}
	if z := unit([]float32{0, 0}); z[0] != 0 || z[1] != 0 {
		t.Errorf("unit(0) = %v", z)
	}
	for _, c := range []struct {
		a, b []float32
		want float64
	}{
		{[]float32{1, 0}, []float32{5, 0}, 1},
		{[]float32{1, 0}, []float32{0, 2}, 0},
		{[]float32{1, 0}, []float32{-1, 0}, -1},
		{[]float32{1, 1}, []float32{1, 0}, math.Sqrt2 / 2},
		{[]float32{0, 0}, []float32{1, 0}, 0},
	} {
		if got := cosine(c.a, c.b); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("cosine(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func uid(n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n) }

// TestRankVector pins the seed's vector scores, 1/(1+d) with d the cosine
// distance, and shows rows LanceDB returned in L2 order coming back in
// cosine order.
func TestRankVector(t *testing.T) {
	mem := func(n int, scope string, v ...float32) schemas.Memory {
		return schemas.Memory{ID: uid(n), Text: fmt.Sprint(n), Scope: scope, Vector: v}
	}
	rows := []schemas.Memory{
		mem(1, "global", -1, 0),                           // opposite: 1/3
		mem(2, "global", 0, 1),                            // orthogonal: 1/2
		mem(3, "global", 0.9, float32(math.Sqrt(1-0.81))), // cosine 0.9: 1/1.1
		mem(4, "global", 10, 0),                           // same direction, far in L2: 1
		mem(5, "agent:b", 1, 0),                           // another scope
		mem(6, "global", 1, 0, 0),                         // another size
		{ID: uid(7) + tombSuffix, Scope: "global", Vector: []float32{1, 0}},
	}
	o := engine.SearchOptions{Scopes: engine.InScopes("global"), Limit: 10}
	got := rankVector(rows, []float32{1, 0}, o)
	want := []struct {
		id    string
		score float64
	}{{uid(4), 1}, {uid(3), 1 / 1.1}, {uid(2), 0.5}, {uid(1), 1.0 / 3}}
	if len(got) != len(want) {
		t.Fatalf("got %d results: %+v", len(got), got)
	}
	for i, w := range want {
		if got[i].Memory.ID != w.id || math.Abs(got[i].Score-w.score) > 1e-6 {
			t.Errorf("result %d = %s %.6f, want %s %.6f", i, got[i].Memory.ID, got[i].Score, w.id, w.score)
		}
	}
	if math.Abs(got[1].Raw-0.9) > 1e-6 {
		t.Errorf("raw score is the cosine: %v", got[1].Raw)
	}
	o.MinScore = 0.6
	if got := rankVector(rows, []float32{1, 0}, o); len(got) != 2 {
		t.Errorf("minScore 0.6 kept %d", len(got))
	}
	o.MinScore, o.Limit = 0, 0
	if got := rankVector(rows, []float32{1, 0}, o); len(got) != 4 {
		t.Errorf("default limit 5 of 4 hits kept %d", len(got))
	}
	o.Limit = 1
	if got := rankVector(rows, []float32{1, 0}, o); len(got) != 1 || got[0].Memory.ID != uid(4) {
		t.Errorf("limit 1: %+v", got)
	}
}
