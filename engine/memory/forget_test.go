package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
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
		// The same text in global: A sees two memories scoring above 0.9.
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
			if c.Score > memory.ForgetAutoDelete {
				confident++
			}
			if c.Memory.Vector != nil {
				t.Error("candidate carries its vector")
			}
		}
		if confident != 2 {
			t.Fatalf("%d candidates above %v, want 2: %v", confident, memory.ForgetAutoDelete, texts(res.Candidates))
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
