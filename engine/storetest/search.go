package storetest

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

func testVectorSearch(t *testing.T, open Opener) {
	s := fresh(t, open)
	ms := add(t, s,
		mem("same", "global", Axis(0)),
		mem("orthogonal", "global", Axis(1)),
		mem("opposite", "global", []float32{-1, 0, 0, 0, 0, 0, 0, 0}),
		mem("close", "global", Mix(0, 2, 0.9)),
	)
	res, err := s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		text  string
		score float64
	}{{"same", 1}, {"close", 1 / (1 + 0.1)}, {"orthogonal", 0.5}, {"opposite", 1.0 / 3}}
	if len(res) != len(want) {
		t.Fatalf("got %d results", len(res))
	}
	for i, w := range want {
		if res[i].Memory.Text != w.text || math.Abs(res[i].Score-w.score) > 1e-5 {
			t.Errorf("result %d = %q %.6f, want %q %.6f", i, res[i].Memory.Text, res[i].Score, w.text, w.score)
		}
		if len(res[i].Memory.Vector) != Dim {
			t.Errorf("result %d has no vector", i)
		}
	}
	// Cosine ignores length.
	res, _ = s.VectorSearch(ctx, []float32{5, 0, 0, 0, 0, 0, 0, 0}, engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 1})
	if len(res) != 1 || res[0].Memory.ID != ms[0].ID || math.Abs(res[0].Score-1) > 1e-5 {
		t.Fatalf("scaled query: %+v", res)
	}
	res, _ = s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 10, MinScore: 0.6})
	if len(res) != 2 {
		t.Fatalf("minScore 0.6 kept %d", len(res))
	}
	res, _ = s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.AllScopes()})
	if len(res) != 4 {
		t.Fatalf("default limit kept %d", len(res))
	}
	// A zero query vector matches nothing better than anything else but must not fail.
	if _, err := s.VectorSearch(ctx, make([]float32, Dim), engine.SearchOptions{Scopes: engine.AllScopes()}); err != nil {
		t.Fatalf("zero query: %v", err)
	}
}

func testVectorScopeFilter(t *testing.T, open Opener) {
	s := fresh(t, open)
	// 50 memories of agent:b sit right on the query; 3 of agent:a further
	// away. A filter applied after a top-k would find none of agent:a's.
	var ms []schemas.Memory
	for i := 0; i < 50; i++ {
		ms = append(ms, mem(fmt.Sprintf("b %d", i), "agent:b", Mix(0, 1, 0.999)))
	}
	for i := 0; i < 3; i++ {
		ms = append(ms, mem(fmt.Sprintf("a %d", i), "agent:a", Mix(0, 2+i, 0.5)))
	}
	add(t, s, ms...)
	res, err := s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.InScopes("agent:a"), Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("scope filter outside the query: got %d of agent:a's 3", len(res))
	}
	for _, r := range res {
		if r.Memory.Scope != "agent:a" {
			t.Fatalf("leaked %+v", r.Memory)
		}
	}
	for _, f := range []engine.ScopeFilter{{}, engine.InScopes(), engine.InScopes("agent:zzz"), engine.InScopes("' OR 1=1 --")} {
		res, err := s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: f, Limit: 5})
		if err != nil || len(res) != 0 {
			t.Errorf("filter %v: %d results, %v", f, len(res), err)
		}
	}
	res, _ = s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.InScopes("agent:a", "agent:b"), Limit: 60})
	if len(res) != 53 {
		t.Fatalf("two scopes: %d", len(res))
	}
}

func testLegacyScope(t *testing.T, open Opener) {
	s := fresh(t, open)
	m := mem("legacy row without scope", "", Axis(0))
	m.ID = id(3)
	if err := s.Import(ctx, m); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, id(3), engine.InScopes(schemas.GlobalScope))
	if err != nil || got.Scope != schemas.GlobalScope {
		t.Fatalf("legacy row: %+v %v", got, err)
	}
	res, _ := s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.InScopes("global")})
	if len(res) != 1 {
		t.Fatal("legacy row not found under global")
	}
	res, _ = s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.InScopes("agent:a")})
	if len(res) != 0 {
		t.Fatal("legacy row leaked into agent:a")
	}
}

func testTextSearch(t *testing.T, open Opener) {
	s := fresh(t, open)
	if !s.HasFullText() {
		t.Skip("backend reports no full-text support")
	}
	add(t, s,
		mem("We deploy everything with Docker compose on the build server", "global", Axis(0)),
		mem("我最喜欢喝乌龙茶", "global", Axis(1)),
		mem("Set JINA_API_KEY in the systemd unit", "agent:a", Axis(2)),
		mem("私はコーヒーが好きです", "global", Axis(3)),
		mem("제 비밀번호 힌트는 고양이 이름입니다", "global", Axis(4)),
		mem("Die Besprechung ist immer am Montag", "global", Axis(5)),
	)
	cases := []struct {
		query, want string
		scopes      engine.ScopeFilter
	}{
		{"Docker", "Docker compose", engine.AllScopes()},
		{"docker", "Docker compose", engine.AllScopes()},
		{"乌龙茶", "乌龙茶", engine.AllScopes()},
		{"喝茶", "", engine.AllScopes()}, // shares no bigram with 我最喜欢喝乌龙茶
		{"JINA_API_KEY", "JINA_API_KEY", engine.InScopes("agent:a")},
		{"JINA_API_KEY", "", engine.InScopes("global")},
		{"コーヒー", "コーヒー", engine.AllScopes()},
		{"고양이", "고양이", engine.AllScopes()},
		{"montag", "Montag", engine.AllScopes()},
	}
	for _, c := range cases {
		res, err := s.TextSearch(ctx, c.query, engine.SearchOptions{Scopes: c.scopes, Limit: 5})
		if err != nil {
			t.Errorf("%q: %v", c.query, err)
			continue
		}
		if c.want == "" {
			if len(res) != 0 {
				t.Errorf("%q (scopes %v) matched %v, want nothing", c.query, c.scopes, texts(res))
			}
			continue
		}
		if len(res) == 0 || !strings.Contains(res[0].Memory.Text, c.want) {
			t.Errorf("%q: got %v, want a hit containing %q", c.query, texts(res), c.want)
			continue
		}
		if res[0].Score <= 0.5 || res[0].Score >= 1 || len(res[0].Memory.Vector) != Dim {
			t.Errorf("%q: score %v (want normalised into (0.5,1)), vector len %d", c.query, res[0].Score, len(res[0].Memory.Vector))
		}
	}
	// More matching words rank higher.
	add(t, s, mem("Docker", "global", Axis(6)))
	res, _ := s.TextSearch(ctx, "docker compose build server", engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 5})
	if len(res) < 2 || !strings.Contains(res[0].Memory.Text, "compose") || res[0].Score < res[1].Score {
		t.Fatalf("ranking: %v", texts(res))
	}
}

func texts(rs []engine.SearchResult) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Memory.Text
	}
	return out
}

func testTextSearchSyntax(t *testing.T, open Opener) {
	s := fresh(t, open)
	add(t, s, mem(`He said "NEAR" is a keyword (really) and * is a star`, "global", Axis(0)))
	for _, q := range []string{`"`, `*`, `NEAR`, `NEAR(a b)`, `(((`, `)`, `' OR 1=1 --`, `a AND`, `OR`, `NOT x`,
		`"unbalanced`, `col:value`, `^start`, `a + b`, "", "   ", "\xff\xfe", strings.Repeat("word ", 20000), "🙂🙂"} {
		if _, err := s.TextSearch(ctx, q, engine.SearchOptions{Scopes: engine.AllScopes()}); err != nil {
			t.Errorf("query %.40q: %v", q, err)
		}
	}
	res, err := s.TextSearch(ctx, `NEAR(keyword`, engine.SearchOptions{Scopes: engine.AllScopes()})
	if err != nil || (s.HasFullText() && len(res) != 1) {
		t.Fatalf("syntax words must be plain words: %v %v", texts(res), err)
	}
}
