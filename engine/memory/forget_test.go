package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/schemas"
)

var forgetCorpus = []string{
	"The staging database password rotates every ninety days",
	"Our team retro happens on the last Friday of each month",
	"The mobile app release checklist lives in the wiki under releases",
	"I prefer green tea over coffee in the afternoon",
}

func TestForgetByIDAndPrefix(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, setup{})
	a := memory.Agent("A")
	var ms []schemas.Memory
	for _, text := range forgetCorpus {
		ms = append(ms, mustStore(t, e, a, memory.StoreRequest{Text: text}))
	}
	for i, key := range []string{ms[0].ID, ms[1].ID[:8], strings.ToUpper(ms[2].ID[:13])} {
		res, err := e.Forget(ctx, a, memory.ForgetRequest{ID: key})
		if err != nil {
			t.Fatalf("Forget(%s): %v", key, err)
		}
		if res.Deleted != ms[i].ID || len(res.Candidates) != 0 {
			t.Fatalf("Forget(%s) = %+v, want deleted %s", key, res, ms[i].ID)
		}
		if _, ok := get(t, e, ms[i].ID); ok {
			t.Fatalf("%s still stored", ms[i].ID)
		}
		if _, err := e.Forget(ctx, a, memory.ForgetRequest{ID: key}); !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("second Forget(%s): err %v, want ErrNotFound", key, err)
		}
	}
	if n := total(t, e); n != 1 {
		t.Fatalf("%d memories left, want 1", n)
	}
	// The deleted memory is gone from both searches.
	res, err := e.Recall(ctx, a, "staging database password rotates", memory.RecallOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Candidates {
		if c.Memory.ID == ms[0].ID {
			t.Fatal("a forgotten memory is still recalled")
		}
	}
	for _, bad := range []string{"abc", ms[3].ID[:7], "zzzzzzzz", "../../etc/passwd", "*"} {
		if _, err := e.Forget(ctx, a, memory.ForgetRequest{ID: bad}); !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("Forget(%q): err %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := e.Forget(ctx, a, memory.ForgetRequest{}); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("empty request: err %v, want ErrInvalid", err)
	}
	if _, err := e.Forget(ctx, a, memory.ForgetRequest{Query: " \n "}); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("blank query: err %v, want ErrInvalid", err)
	}
	if n := total(t, e); n != 1 {
		t.Fatalf("%d memories left, want 1", n)
	}
}

func TestForgetAmbiguousPrefix(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, setup{})
	a := memory.Agent("A")
	for i, id := range []string{"abcdef01-0000-4000-8000-000000000001", "abcdef01-0000-4000-8000-000000000002"} {
		mustStore(t, e, a, memory.StoreRequest{ID: id, Text: forgetCorpus[i]})
	}
	_, err := e.Forget(ctx, a, memory.ForgetRequest{ID: "abcdef01"})
	if !errors.Is(err, engine.ErrAmbiguous) {
		t.Fatalf("err %v, want ErrAmbiguous", err)
	}
	if n := total(t, e); n != 2 {
		t.Fatalf("%d memories left, want 2", n)
	}
	res, err := e.Forget(ctx, a, memory.ForgetRequest{ID: "abcdef01-0000-4000-8000-000000000002"})
	if err != nil || res.Deleted != "abcdef01-0000-4000-8000-000000000002" {
		t.Fatalf("full id: %+v, %v", res, err)
	}
}

func TestForgetByQuery(t *testing.T) {
	ctx := context.Background()
	a := memory.Agent("A")

	t.Run("one confident match is deleted", func(t *testing.T) {
		e := newEngine(t, setup{})
		var ms []schemas.Memory
		for _, text := range forgetCorpus {
			ms = append(ms, mustStore(t, e, a, memory.StoreRequest{Text: text}))
		}
		res, err := e.Forget(ctx, a, memory.ForgetRequest{Query: forgetCorpus[1]})
		if err != nil {
			t.Fatal(err)
		}
		if res.Deleted != ms[1].ID || len(res.Candidates) != 0 {
			t.Fatalf("Forget by query = %+v, want %s deleted", res, ms[1].ID)
		}
		for i, m := range ms {
			if _, ok := get(t, e, m.ID); ok == (i == 1) {
				t.Errorf("memory %d stored=%v after forgetting memory 1", i, ok)
			}
		}
	})

	t.Run("two confident matches are only listed", func(t *testing.T) {
		e := newEngine(t, setup{})
		for _, text := range forgetCorpus {
			mustStore(t, e, a, memory.StoreRequest{Text: text})
		}
		// The same text in global: A sees two equally relevant memories.
		mustStore(t, e, memory.Admin(), memory.StoreRequest{Text: forgetCorpus[1], Scope: "global"})
		before := all(t, e)
		res, err := e.Forget(ctx, a, memory.ForgetRequest{Query: forgetCorpus[1]})
		if err != nil {
			t.Fatal(err)
		}
		if res.Deleted != "" {
			t.Fatalf("deleted %s with two confident matches", res.Deleted)
		}
		confident := 0
		for _, c := range res.Candidates {
			if c.Sources.Fused >= memory.ForgetMinRelevance {
				confident++
			}
			if c.Memory.Vector != nil {
				t.Error("candidate carries its vector")
			}
		}
		if confident != 2 {
			t.Fatalf("%d candidates above %v, want 2: %v", confident, memory.ForgetMinRelevance, texts(res.Candidates))
		}
		if after := all(t, e); len(after) != len(before) {
			t.Fatalf("%d memories after, %d before", len(after), len(before))
		}
	})

	t.Run("vague query is only listed", func(t *testing.T) {
		e := newEngine(t, setup{})
		for _, text := range []string{
			"The staging database password rotates every ninety days",
			"The production database password rotates every thirty days",
			"The analytics database password is shared with the data team",
		} {
			mustStore(t, e, a, memory.StoreRequest{Text: text})
		}
		res, err := e.Forget(ctx, a, memory.ForgetRequest{Query: "database password"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Deleted != "" || len(res.Candidates) < 2 {
			t.Fatalf("vague forget = deleted %q, %d candidates; want ≥2 candidates and no deletion", res.Deleted, len(res.Candidates))
		}
		if n := total(t, e); n != 3 {
			t.Fatalf("%d memories left, want 3", n)
		}
	})

	t.Run("nothing visible", func(t *testing.T) {
		e := newEngine(t, setup{})
		mustStore(t, e, memory.Agent("B"), memory.StoreRequest{Text: forgetCorpus[0]})
		res, err := e.Forget(ctx, a, memory.ForgetRequest{Query: forgetCorpus[0]})
		if err != nil {
			t.Fatal(err)
		}
		if res.Deleted != "" || len(res.Candidates) != 0 {
			t.Fatalf("A's forget reached B's memory: %+v", res)
		}
		if n := total(t, e); n != 1 {
			t.Fatalf("%d memories left, want 1", n)
		}
	})
}

func TestForgetScopeOption(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, setup{})
	a := memory.Agent("A")
	own := mustStore(t, e, a, memory.StoreRequest{Text: forgetCorpus[0]})
	g := mustStore(t, e, a, memory.StoreRequest{Text: forgetCorpus[1], Scope: "global"})
	// Narrowed to global, A's own memory is out of reach.
	if _, err := e.Forget(ctx, a, memory.ForgetRequest{ID: own.ID, Scope: "global"}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("err %v, want ErrNotFound", err)
	}
	if _, err := e.Forget(ctx, a, memory.ForgetRequest{ID: g.ID, Scope: "agent:B"}); !errors.Is(err, engine.ErrScopeDenied) {
		t.Fatalf("err %v, want ErrScopeDenied", err)
	}
	res, err := e.Forget(ctx, a, memory.ForgetRequest{ID: g.ID, Scope: "global"})
	if err != nil || res.Deleted != g.ID {
		t.Fatalf("%+v, %v", res, err)
	}
	if _, ok := get(t, e, own.ID); !ok {
		t.Fatal("own memory deleted")
	}
}

func TestConfidentMatch(t *testing.T) {
	c := func(id string, fused, final float64) retrieve.Candidate {
		return retrieve.Candidate{Memory: schemas.Memory{ID: id}, Score: final, Sources: retrieve.Sources{Fused: fused, Final: final}}
	}
	tests := []struct {
		name string
		cs   []retrieve.Candidate
		want string
	}{
		{"none", nil, ""},
		{"a clear leader the seed's 0.9 missed (82% vs 42% shown)", []retrieve.Candidate{c("a", 0.87, 0.82), c("b", 0.58, 0.42)}, "a"},
		{"alone and relevant", []retrieve.Candidate{c("a", 0.86, 0.7)}, "a"},
		{"alone, a clear keyword match", []retrieve.Candidate{c("a", 0.80, 0.8)}, "a"},
		{"alone but weak", []retrieve.Candidate{c("a", 0.68, 0.6)}, ""},
		{"alone and barely above unrelated", []retrieve.Candidate{c("a", 0.58, 0.5)}, ""},
		{"two close matches", []retrieve.Candidate{c("a", 0.95, 0.9), c("b", 0.90, 0.8)}, ""},
		{"exact duplicates", []retrieve.Candidate{c("a", 1, 0.9), c("b", 1, 0.9)}, ""},
		{"a margin just over the bound", []retrieve.Candidate{c("a", 0.96, 0.9), c("b", 0.85, 0.8)}, "a"},
		{"below both relevance bounds", []retrieve.Candidate{c("a", 0.69, 0.69), c("b", 0.3, 0.3)}, ""},
		{"README's dark mode with the local embedder (72% vs 39% shown)", []retrieve.Candidate{c("a", 0.768, 0.72), c("b", 0.505, 0.39)}, "a"},
		{"a clear match whose runner-up shares under half its relevance", []retrieve.Candidate{c("a", 0.80, 0.7), c("b", 0.64, 0.6)}, "a"},
		{"a runner-up sharing more than half ('password': 0.84 and 0.71)", []retrieve.Candidate{c("a", 0.841, 0.7), c("b", 0.708, 0.6)}, ""},
		{"a strong match needs only the absolute lead", []retrieve.Candidate{c("a", 0.87, 0.7), c("b", 0.76, 0.6)}, "a"},
		{"a clear share but too small a lead", []retrieve.Candidate{c("a", 0.71, 0.7), c("b", 0.62, 0.6)}, ""},
		{"a runner-up below the unrelated level", []retrieve.Candidate{c("a", 0.72, 0.7), c("b", 0.45, 0.4)}, "a"},
		{"ranked by relevance, not by final score", []retrieve.Candidate{c("old", 0.84, 0.75), c("new", 1.0, 0.72), c("x", 0.6, 0.5)}, "new"},
		{"the runner-up found late", []retrieve.Candidate{c("x", 0.5, 0.5), c("a", 0.9, 0.6), c("b", 0.88, 0.55)}, ""},
	}
	for _, tt := range tests {
		got := memory.ConfidentMatch(tt.cs)
		id := ""
		if got != nil {
			id = got.Memory.ID
		}
		if id != tt.want {
			t.Errorf("%s: ConfidentMatch = %q, want %q", tt.name, id, tt.want)
		}
	}
}
