package memory_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/schemas"
)

// cached is an engine with a recall cache and an embedder that counts the
// queries it embeds: a recall that does not embed its query was answered
// from the cache.
type cached struct {
	t   *testing.T
	e   *memory.Engine
	emb *fakeEmbedder
}

func newCached(t *testing.T, s setup) cached {
	t.Helper()
	emb := &fakeEmbedder{Embedder: localEmbedder(t)}
	s.emb = emb
	if s.recallCache == 0 {
		s.recallCache = 64
	}
	return cached{t: t, e: newEngine(t, s), emb: emb}
}

// recall recalls query for who and reports whether it was computed (the
// query embedded) rather than served from the cache.
func (c cached) recall(who memory.Who, query string, o memory.RecallOptions) (retrieve.Result, bool) {
	c.t.Helper()
	before := len(c.emb.seenQueries())
	res, err := c.e.Recall(context.Background(), who, query, o)
	if err != nil {
		c.t.Fatalf("Recall(%q): %v", query, err)
	}
	return res, len(c.emb.seenQueries()) > before
}

// wantServed recalls and fails unless the answer came from the cache.
func (c cached) wantServed(what string, who memory.Who, query string, o memory.RecallOptions) retrieve.Result {
	c.t.Helper()
	res, computed := c.recall(who, query, o)
	if computed {
		c.t.Errorf("%s: recall of %q computed again, want it served from the cache", what, query)
	}
	return res
}

// wantComputed recalls and fails unless the answer was computed anew.
func (c cached) wantComputed(what string, who memory.Who, query string, o memory.RecallOptions) retrieve.Result {
	c.t.Helper()
	res, computed := c.recall(who, query, o)
	if !computed {
		c.t.Errorf("%s: recall of %q served from the cache, want it computed", what, query)
	}
	return res
}

// newSeeded is a cached engine with agent A's memories stored.
func newSeeded(t *testing.T) (cached, memory.Who) {
	t.Helper()
	c := newCached(t, setup{})
	a := memory.Agent("A")
	seedRecall(t, c.e, a)
	return c, a
}

func hasID(cs []retrieve.Candidate, id string) bool {
	return slices.ContainsFunc(cs, func(c retrieve.Candidate) bool { return c.Memory.ID == id })
}

func TestRecallCacheServesARepeat(t *testing.T) {
	c, a := newSeeded(t)
	const q = "what database did we decide on for billing"
	first := c.wantComputed("first recall", a, q, memory.RecallOptions{})
	again := c.wantServed("repeat", a, q, memory.RecallOptions{})
	if !reflect.DeepEqual(first, again) {
		t.Errorf("the cached answer differs:\n got %+v\nwant %+v", again, first)
	}
	st, err := c.e.Stats(context.Background(), a, "")
	if err != nil {
		t.Fatal(err)
	}
	if st.RecallCache == nil || st.RecallCache.Hits != 1 || st.RecallCache.Misses != 1 || st.RecallCache.Size != 1 || st.RecallCache.HitRate != 0.5 {
		t.Errorf("recall cache stats %+v, want 1 answer kept, 1 hit, 1 miss", st.RecallCache)
	}
	// A credential in the query is redacted before the key is made, as
	// before it is embedded: the redacted query is what is cached.
	c.wantComputed("redacted query", a, q+" sk-proj-0123456789abcdefABCD0123", memory.RecallOptions{})
	c.wantServed("redacted query again", a, q+" sk-proj-0123456789abcdefABCD0123", memory.RecallOptions{})
}

// Every option that changes the answer is part of the key.
func TestRecallCacheKeyHasEveryOption(t *testing.T) {
	c, a := newSeeded(t)
	const q = "what database did we decide on for billing"
	c.wantComputed("default", a, q, memory.RecallOptions{})
	for _, o := range []memory.RecallOptions{
		{Limit: 2},
		{Category: schemas.CategoryDecision},
		{MinScore: ptr(0.5)},
		{MinScore: ptr(0.6)},
		{Direct: true},
		{History: true},
		{Scope: "agent:A"},
		{Scope: "global"},
	} {
		c.wantComputed(fmt.Sprintf("options %+v", o), a, q, o)
		c.wantServed(fmt.Sprintf("options %+v again", o), a, q, o)
	}
	c.wantComputed("another query", a, q+"?", memory.RecallOptions{})
	c.wantServed("default again", a, q, memory.RecallOptions{})
}

// A write to one of the answer's scopes drops it; a write elsewhere does not.
func TestRecallCacheWrites(t *testing.T) {
	ctx := context.Background()
	c := newCached(t, setup{scopes: isolationScopes})
	a, b := memory.Agent("A"), memory.Agent("B")
	seedRecall(t, c.e, a)
	const q = "where does the staging cluster run"
	c.wantComputed("first", a, q, memory.RecallOptions{})

	mustStore(t, c.e, b, memory.StoreRequest{Text: "The staging cluster of team B runs in us-east-2"})
	c.wantServed("after a write to agent:B", a, q, memory.RecallOptions{})

	added := mustStore(t, c.e, a, memory.StoreRequest{Text: "The staging cluster moved to eu-central-1 in May"})
	res := c.wantComputed("after a write to agent:A", a, q, memory.RecallOptions{})
	if !hasID(res.Candidates, added.ID) {
		t.Errorf("the new memory is not recalled: %v", texts(res.Candidates))
	}
	c.wantServed("again", a, q, memory.RecallOptions{})

	global := mustStore(t, c.e, memory.Admin(), memory.StoreRequest{Text: "Every staging cluster is rebuilt on Sundays", Scope: "global"})
	res = c.wantComputed("after a write to global", a, q, memory.RecallOptions{})
	if !hasID(res.Candidates, global.ID) {
		t.Errorf("the new global memory is not recalled: %v", texts(res.Candidates))
	}

	// Updates and deletes, through the engine and through the store.
	if _, err := c.e.Update(ctx, a, memory.UpdateRequest{ID: added.ID, Importance: ptr(0.9)}); err != nil {
		t.Fatal(err)
	}
	c.wantComputed("after an update", a, q, memory.RecallOptions{})
	if _, err := c.e.Backend().Delete(ctx, added.ID, engine.AllScopes()); err != nil {
		t.Fatal(err)
	}
	res = c.wantComputed("after a delete", a, q, memory.RecallOptions{})
	if hasID(res.Candidates, added.ID) {
		t.Error("a deleted memory is recalled")
	}
	if _, err := c.e.Backend().BulkDelete(ctx, engine.BulkFilter{Scopes: engine.InScopes("agent:B")}); err != nil {
		t.Fatal(err)
	}
	c.wantServed("after a bulk delete of agent:B", a, q, memory.RecallOptions{})

	// An admin's answer over every scope is dropped by a write anywhere.
	c.wantComputed("admin", memory.Admin(), q, memory.RecallOptions{})
	c.wantServed("admin again", memory.Admin(), q, memory.RecallOptions{})
	mustStore(t, c.e, b, memory.StoreRequest{Text: "Team B's staging cluster has three nodes"})
	c.wantComputed("admin after a write to agent:B", memory.Admin(), q, memory.RecallOptions{})
}

// A query replica's store changes only through the memory log: what it
// applies drops the answers of the scopes it touches.
func TestRecallCacheReplicaWrites(t *testing.T) {
	ctx := context.Background()
	c, a := newSeeded(t)
	st, ok := c.e.Backend().(*sqlitestore.Store)
	if !ok {
		t.Fatalf("store %T cannot apply the memory log", c.e.Backend())
	}
	const q = "when is my daughter's birthday"
	vec, err := c.emb.EmbedPassage(ctx, "My daughter's birthday party is on the fifteenth of March")
	if err != nil {
		t.Fatal(err)
	}
	party := schemas.Memory{ID: "0b6a6f3e-0000-4000-8000-000000000001", Text: "My daughter's birthday party is on the fifteenth of March",
		Vector: vec, Category: schemas.CategoryFact, Scope: "agent:B", Importance: 0.7, Timestamp: time.Now().UnixMilli()}

	c.wantComputed("first", a, q, memory.RecallOptions{})
	if err := st.ApplyLog(ctx, 1, []schemas.Memory{party}, nil); err != nil {
		t.Fatal(err)
	}
	c.wantServed("after the log put a memory in agent:B", a, q, memory.RecallOptions{})

	party.Scope = "agent:A" // moved, as an update on the writer would
	if err := st.ApplyLog(ctx, 2, []schemas.Memory{party}, nil); err != nil {
		t.Fatal(err)
	}
	res := c.wantComputed("after the log moved it to agent:A", a, q, memory.RecallOptions{})
	if !hasID(res.Candidates, party.ID) {
		t.Errorf("the memory the log brought is not recalled: %v", texts(res.Candidates))
	}
	c.wantComputed("agent B after the move", memory.Agent("B"), q, memory.RecallOptions{})
	party.Scope = "agent:B"
	if err := st.ApplyLog(ctx, 3, []schemas.Memory{party}, nil); err != nil {
		t.Fatal(err)
	}
	res = c.wantComputed("after the log moved it back", a, q, memory.RecallOptions{})
	if hasID(res.Candidates, party.ID) {
		t.Errorf("a memory moved to another agent's scope is recalled: %v", texts(res.Candidates))
	}
	res = c.wantComputed("agent B after the move back", memory.Agent("B"), q, memory.RecallOptions{})
	if !hasID(res.Candidates, party.ID) {
		t.Errorf("agent B does not recall its memory: %v", texts(res.Candidates))
	}
	if err := st.ApplyLog(ctx, 4, nil, []string{party.ID}); err != nil {
		t.Fatal(err)
	}
	c.wantServed("agent A after the log deleted a memory of agent:B", a, q, memory.RecallOptions{})
	res = c.wantComputed("agent B after the delete", memory.Agent("B"), q, memory.RecallOptions{})
	if hasID(res.Candidates, party.ID) {
		t.Error("a memory the log deleted is recalled")
	}
}

// An answer is never served to a caller whose scopes differ, for the
// same query and options.
func TestRecallCacheIsolation(t *testing.T) {
	c := newCached(t, setup{scopes: isolationScopes})
	writers := map[string]memory.Who{"agent:A": memory.Agent("A"), "agent:B": memory.Agent("B"), "global": memory.Admin(), "custom:shared": memory.Agent("C")}
	for scope, ft := range fixtureTexts {
		mustStore(t, c.e, writers[scope], memory.StoreRequest{Text: ft.text, Scope: scope})
	}
	for _, ft := range fixtureTexts {
		q := ft.question
		for _, agent := range []string{"A", "B", "C"} {
			who := memory.Agent(agent)
			res := c.wantComputed("agent "+agent, who, q, memory.RecallOptions{})
			for _, cd := range res.Candidates {
				if !slices.Contains(visible[agent], cd.Memory.Scope) {
					t.Errorf("agent %s recalled %q of scope %s", agent, cd.Memory.Text, cd.Memory.Scope)
				}
			}
			c.wantServed("agent "+agent+" again", who, q, memory.RecallOptions{})
		}
		c.wantComputed("admin", memory.Admin(), q, memory.RecallOptions{})
		c.wantComputed("admin in global", memory.Admin(), q, memory.RecallOptions{Scope: "global"})
		// Agent D reads agent:D and global: none of the answers above is its.
		c.wantComputed("agent D", memory.Agent("D"), q, memory.RecallOptions{})
	}
}

func TestRecallCacheExpires(t *testing.T) {
	c := newCached(t, setup{recallCacheTTL: 200 * time.Millisecond})
	a := memory.Agent("A")
	seedRecall(t, c.e, a)
	const q = "which editor theme do I prefer"
	c.wantComputed("first", a, q, memory.RecallOptions{})
	c.wantServed("at once", a, q, memory.RecallOptions{})
	time.Sleep(400 * time.Millisecond)
	c.wantComputed("after the TTL", a, q, memory.RecallOptions{})
}

func TestRecallCacheOff(t *testing.T) {
	c := newCached(t, setup{recallCache: -1})
	a := memory.Agent("A")
	seedRecall(t, c.e, a)
	const q = "which editor theme do I prefer"
	first := c.wantComputed("first", a, q, memory.RecallOptions{})
	again := c.wantComputed("repeat", a, q, memory.RecallOptions{})
	if !reflect.DeepEqual(ids(first.Candidates), ids(again.Candidates)) {
		t.Errorf("answers differ without a cache: %v, %v", ids(first.Candidates), ids(again.Candidates))
	}
	st, err := c.e.Stats(context.Background(), a, "")
	if err != nil {
		t.Fatal(err)
	}
	if st.RecallCache != nil {
		t.Errorf("recall cache stats %+v without a cache", st.RecallCache)
	}
	if _, ok := c.e.RecallCacheStats(); ok {
		t.Error("RecallCacheStats reports a cache")
	}
}

// A degraded answer (the embedder down: BM25 alone) is never kept, and a
// whole one kept before is served while the embedder is down.
func TestRecallCacheKeepsNoFallback(t *testing.T) {
	c, a := newSeeded(t)
	const q, q2 = "which editor theme do I prefer", "what database did we decide on for billing"
	c.wantComputed("first", a, q, memory.RecallOptions{})
	c.emb.err = schemas.ErrUnavailable // set between recalls: no recall is running
	hits := func() uint64 {
		st, _ := c.e.RecallCacheStats()
		return st.Hits
	}
	for i := range 2 {
		before := hits()
		res, err := c.e.Recall(context.Background(), a, q2, memory.RecallOptions{})
		if err != nil || res.Fallback == "" {
			t.Fatalf("recall %d with the embedder down: %v, fallback %q", i, err, res.Fallback)
		}
		if hits() != before {
			t.Fatalf("recall %d with the embedder down was served a fallback answer from the cache", i)
		}
	}
	if res := c.wantServed("a whole answer while the embedder is down", a, q, memory.RecallOptions{}); res.Fallback != "" {
		t.Errorf("served answer says %q", res.Fallback)
	}
}

// What a caller does to an answer does not change the next one served.
func TestRecallCacheAnswersAreCopies(t *testing.T) {
	c, a := newSeeded(t)
	const q = "what database did we decide on for billing"
	first := c.wantComputed("first", a, q, memory.RecallOptions{})
	want := deepCopy(t, first)
	scribble := func(res retrieve.Result) {
		if len(res.Candidates) == 0 || len(res.Candidates[0].Memory.Vector) == 0 || len(res.Candidates[0].Memory.Metadata) == 0 {
			t.Fatalf("nothing to scribble on: %+v", res)
		}
		m := &res.Candidates[0].Memory
		m.Text, m.Vector[0], m.Metadata[0] = "scribbled", 42, 'X'
		res.Candidates[0].Score = -1
		slices.Reverse(res.Candidates)
	}
	scribble(first)
	hit := c.wantServed("after the computed answer was changed", a, q, memory.RecallOptions{})
	if !reflect.DeepEqual(hit, want) {
		t.Fatalf("a change to the computed answer reached the cache:\n got %+v\nwant %+v", hit, want)
	}
	scribble(hit)
	if hit := c.wantServed("after a served answer was changed", a, q, memory.RecallOptions{}); !reflect.DeepEqual(hit, want) {
		t.Fatalf("a change to a served answer reached the cache:\n got %+v\nwant %+v", hit, want)
	}
}

func deepCopy(t *testing.T, r retrieve.Result) retrieve.Result {
	t.Helper()
	r.Candidates = slices.Clone(r.Candidates)
	for i := range r.Candidates {
		r.Candidates[i].Memory.Vector = slices.Clone(r.Candidates[i].Memory.Vector)
		r.Candidates[i].Memory.Metadata = slices.Clone(r.Candidates[i].Memory.Metadata)
	}
	return r
}

// TestRecallCacheRace: recalls racing writes. A recall that starts after
// a write completed sees it: the memory kept last is recalled and the one
// deleted last is not, whether the answer is computed or served. Each
// write stores a memory that stays and one that the next write deletes.
func TestRecallCacheRace(t *testing.T) {
	ctx := context.Background()
	c := newCached(t, setup{})
	a := memory.Agent("A")
	const q = "zebra enclosure"
	// state is what the writes completed so far leave: the memory to be
	// recalled and the one deleted.
	type state struct{ present, deleted string }
	var now atomic.Pointer[state]
	first := mustStore(t, c.e, a, memory.StoreRequest{Text: "The zebra enclosure number 0 is painted kestrel blue"})
	now.Store(&state{present: first.ID})
	const writes = 30
	words := []string{"kestrel", "harbour", "violet", "granite", "saffron", "meadow", "copper", "lantern", "juniper", "obsidian"}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var served, computed atomic.Int64
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				want := now.Load()
				before := len(c.emb.seenQueries())
				res, err := c.e.Recall(ctx, a, q, memory.RecallOptions{Limit: retrieve.MaxLimit, Direct: true})
				if err != nil {
					t.Error(err)
					return
				}
				if len(c.emb.seenQueries()) == before {
					served.Add(1)
				} else {
					computed.Add(1)
				}
				if !hasID(res.Candidates, want.present) {
					t.Errorf("a recall after the write of %s does not recall it: %v", want.present, ids(res.Candidates))
					return
				}
				if want.deleted != "" && hasID(res.Candidates, want.deleted) {
					t.Errorf("a recall after the delete of %s recalls it", want.deleted)
					return
				}
			}
		})
	}
	victim := ""
	for i := 1; i <= writes; i++ {
		keep := mustStore(t, c.e, a, memory.StoreRequest{
			Text: fmt.Sprintf("The zebra enclosure number %d is painted %s %s", i, words[i%len(words)], words[(i*7+3)%len(words)])})
		if victim != "" {
			if _, err := c.e.Backend().Delete(ctx, victim, engine.AllScopes()); err != nil {
				t.Fatal(err)
			}
		}
		now.Store(&state{present: keep.ID, deleted: victim})
		victim = mustStore(t, c.e, a, memory.StoreRequest{
			Text: fmt.Sprintf("The zebra enclosure shed %d holds %s and %s", i, words[(i+5)%len(words)], words[(i*3+1)%len(words)])}).ID
		time.Sleep(2 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d recalls served from the cache, %d computed", served.Load(), computed.Load())
	if served.Load() == 0 {
		t.Error("no recall was served from the cache: the race was not exercised")
	}
}
