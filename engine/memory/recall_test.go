package memory_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/schemas"
)

var recallCorpus = []string{
	"I prefer dark mode in every code editor",
	"We decided to use Postgres for the billing service",
	"The JINA_API_KEY for embeddings is kept in the team password manager",
	"My daughter's birthday is on the fourteenth of March",
	"The staging Kubernetes cluster runs in eu-west-1",
	"Lunch with the design team is every Friday at noon",
}

func seedRecall(t *testing.T, e *memory.Engine, who memory.Who) map[string]schemas.Memory {
	t.Helper()
	out := map[string]schemas.Memory{}
	for _, text := range recallCorpus {
		out[text] = mustStore(t, e, who, memory.StoreRequest{Text: text})
	}
	return out
}

func TestRecallFindsBySharedWordsAndKeyword(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, setup{})
	a := memory.Agent("A")
	ms := seedRecall(t, e, a)
	for _, tc := range []struct {
		query, want string
		bm25        bool
	}{
		{"which editor theme do I prefer, dark or light?", recallCorpus[0], false},
		{"what database did we decide on for billing", recallCorpus[1], false},
		{"JINA_API_KEY", recallCorpus[2], true},
		{"Postgres", recallCorpus[1], true},
		{"when is my daughter's birthday", recallCorpus[3], false},
		{"kubernetes staging cluster region", recallCorpus[4], false},
	} {
		res, err := e.Recall(ctx, a, tc.query, memory.RecallOptions{})
		if err != nil {
			t.Fatalf("Recall(%q): %v", tc.query, err)
		}
		if len(res.Candidates) == 0 || res.Candidates[0].Memory.ID != ms[tc.want].ID {
			t.Errorf("Recall(%q) top = %v, want %q", tc.query, texts(res.Candidates), tc.want)
			continue
		}
		top := res.Candidates[0]
		if tc.bm25 && !top.Sources.BM25Hit {
			t.Errorf("Recall(%q): keyword hit without BM25: %+v", tc.query, top.Sources)
		}
		if res.Mode != retrieve.ModeHybrid {
			t.Errorf("mode %q, want hybrid", res.Mode)
		}
		if top.Score <= 0 || top.Score > 1 || top.Memory.Scope != "agent:A" {
			t.Errorf("top candidate %+v", top)
		}
	}
}

func texts(cs []retrieve.Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Memory.Text
	}
	return out
}

func TestRecallLimitAndMinScore(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, setup{})
	a := memory.Agent("A")
	seedRecall(t, e, a)
	res, err := e.Recall(ctx, a, "tell me about the billing service database", memory.RecallOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) == 0 || len(res.Candidates) > 2 {
		t.Fatalf("Limit 2 gave %d candidates", len(res.Candidates))
	}
	high := 0.99
	res, err = e.Recall(ctx, a, "tell me about the billing service database", memory.RecallOptions{MinScore: &high})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) != 0 {
		t.Fatalf("MinScore .99 kept %v", texts(res.Candidates))
	}
	// A limit no caller should send must not take the process down.
	for _, limit := range []int{-1, 0, 1 << 30, math.MaxInt} {
		for _, cat := range []schemas.Category{"", schemas.CategoryDecision} {
			res, err := e.Recall(ctx, a, "billing database", memory.RecallOptions{Limit: limit, Category: cat})
			if err != nil {
				t.Fatalf("Limit %d category %q: %v", limit, cat, err)
			}
			if len(res.Candidates) == 0 || len(res.Candidates) > len(recallCorpus) {
				t.Fatalf("Limit %d category %q: %d candidates", limit, cat, len(res.Candidates))
			}
		}
	}
}

func TestRecallCategoryFilter(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, setup{})
	a := memory.Agent("A")
	ms := seedRecall(t, e, a)
	res, err := e.Recall(ctx, a, "dark mode editor preference billing Postgres", memory.RecallOptions{Category: schemas.CategoryDecision})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) == 0 {
		t.Fatal("no decision found")
	}
	for _, c := range res.Candidates {
		if c.Memory.Category != schemas.CategoryDecision {
			t.Errorf("category filter let through %q (%s)", c.Memory.Text, c.Memory.Category)
		}
	}
	if res.Candidates[0].Memory.ID != ms[recallCorpus[1]].ID {
		t.Errorf("top decision %q", res.Candidates[0].Memory.Text)
	}
	if _, err := e.Recall(ctx, a, "anything", memory.RecallOptions{Category: "gossip"}); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("unknown category: err %v, want ErrInvalid", err)
	}
}

func TestRecallRespectsScopes(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, setup{scopes: isolationScopes})
	const text = "The quarterly budget spreadsheet is in the finance drive"
	own := map[string]schemas.Memory{}
	for _, id := range []string{"A", "B"} {
		own[id] = mustStore(t, e, memory.Agent(id), memory.StoreRequest{Text: text})
	}
	g := mustStore(t, e, memory.Admin(), memory.StoreRequest{Text: "The finance drive quarterly budget folder is read only", Scope: "global"})
	for _, tc := range []struct {
		who   memory.Who
		scope string
		want  []string
		err   error
	}{
		{memory.Agent("A"), "", []string{own["A"].ID, g.ID}, nil},
		{memory.Agent("B"), "", []string{own["B"].ID, g.ID}, nil},
		{memory.Agent("C"), "", []string{g.ID}, nil},
		{memory.Agent("A"), "agent:A", []string{own["A"].ID}, nil},
		{memory.Agent("A"), "global", []string{g.ID}, nil},
		{memory.Agent("A"), "agent:B", nil, engine.ErrScopeDenied},
		{memory.Agent("C"), "agent:A", nil, engine.ErrScopeDenied},
		{memory.Agent("A"), "bad scope", nil, schemas.ErrInvalid},
		{memory.Admin(), "", []string{own["A"].ID, own["B"].ID, g.ID}, nil},
		{memory.Admin(), "agent:B", []string{own["B"].ID}, nil},
		{memory.Admin(), "bad scope", nil, schemas.ErrInvalid},
	} {
		res, err := e.Recall(ctx, tc.who, "quarterly budget spreadsheet finance drive", memory.RecallOptions{Limit: 10, Scope: tc.scope})
		if tc.err != nil {
			if !errors.Is(err, tc.err) || len(res.Candidates) != 0 {
				t.Errorf("%+v scope %q: %d candidates, err %v; want %v", tc.who, tc.scope, len(res.Candidates), err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got := ids(res.Candidates)
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(got, want) {
			t.Errorf("%+v scope %q: got %v, want %v", tc.who, tc.scope, got, want)
		}
	}
}

// Whatever the query, Recall answers with results or a clear error.
func TestRecallOddQueries(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, setup{})
	a := memory.Agent("A")
	seedRecall(t, e, a)
	for _, tc := range []struct {
		name, query string
		invalid     bool
	}{
		{"empty", "", true},
		{"whitespace", " \t\n ", true},
		{"only invalid UTF-8", "\xff\xfe\xfd", true},
		{"invalid UTF-8 around words", "dark\xffmode \xc3editor", false},
		{"100 KB", strings.Repeat("billing Postgres database ", 4200), false},
		{"100 KB of one multibyte rune", strings.Repeat("é", 50*1024+1), false},
		{"100 KB without spaces", strings.Repeat("x", 100*1024), false},
		{"emoji", "🎉🔥💾", false},
		{"emoji with words", "🌙 dark mode 🌙", false},
		{"CJK", "我喜欢深色模式", false},
		{"NUL", "dark\x00mode", false},
		{"FTS quote", `"unclosed phrase`, false},
		{"FTS operators", "dark AND OR NOT NEAR(mode editor, 2)", false},
		{"FTS column", "text:dark body:mode", false},
		{"FTS prefix and caret", "^dark* mo*", false},
		{"FTS parens", "((( )))", false},
		{"FTS minus", "-dark -mode", false},
		{"SQL", "'; DROP TABLE memories; --", false},
		{"punctuation only", "?!.,;:", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.Recall(ctx, a, tc.query, memory.RecallOptions{})
			if tc.invalid {
				if !errors.Is(err, schemas.ErrInvalid) {
					t.Fatalf("err %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err %v", err)
			}
			for _, c := range res.Candidates {
				if c.Memory.Scope != "agent:A" || math.IsNaN(c.Score) || c.Score < 0 || c.Score > 1 {
					t.Fatalf("bad candidate %+v", c)
				}
			}
		})
	}
	if n := total(t, e); n != len(recallCorpus) {
		t.Fatalf("%d memories after odd queries, want %d", n, len(recallCorpus))
	}
}

func TestRecallEmbedderFailure(t *testing.T) {
	boom := errors.New("embedding endpoint down")
	emb := &fakeEmbedder{Embedder: localEmbedder(t)}
	e := newEngine(t, setup{emb: emb})
	a := memory.Agent("A")
	seedRecall(t, e, a)
	emb.err = boom
	if _, err := e.Recall(context.Background(), a, "dark mode editor", memory.RecallOptions{}); !errors.Is(err, boom) {
		t.Fatalf("err %v, want the embedder's", err)
	}
	// The embedder sees the query cut to MaxQueryBytes on a rune boundary.
	emb.err = nil
	long := strings.Repeat("é", retrieve.MaxQueryBytes)
	if _, err := e.Recall(context.Background(), a, long, memory.RecallOptions{}); err != nil {
		t.Fatal(err)
	}
	qs := emb.seenQueries()
	last := qs[len(qs)-1]
	if len(last) > retrieve.MaxQueryBytes || !strings.HasPrefix(long, last) || len(last) < retrieve.MaxQueryBytes-1 {
		t.Fatalf("embedded query is %d bytes, want ≤ %d on a rune boundary", len(last), retrieve.MaxQueryBytes)
	}
}
