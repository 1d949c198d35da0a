package memory_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/schemas"
)

func TestListPagingAndFilters(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, setup{})
	a := memory.Agent("A")
	var stored []schemas.Memory
	for i := range 7 {
		stored = append(stored, mustStore(t, e, a, memory.StoreRequest{Text: fmt.Sprintf("Server number %d in the rack is called node-%c", i, 'a'+i)}))
	}
	for i := range 3 {
		stored = append(stored, mustStore(t, e, a, memory.StoreRequest{Text: fmt.Sprintf("We decided to retire legacy service number %d this year", i), Scope: "global"}))
	}
	mustStore(t, e, memory.Agent("B"), memory.StoreRequest{Text: "B's own note about the coffee machine schedule"})
	// Newest first; memories stored within one millisecond tie on the
	// timestamp and are ordered by id, descending.
	newestFirst := slices.Clone(stored)
	slices.SortFunc(newestFirst, func(a, b schemas.Memory) int {
		if c := cmp.Compare(b.Timestamp, a.Timestamp); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	if newestFirst[0].Timestamp < stored[0].Timestamp {
		t.Fatal("timestamps go backwards")
	}

	// Paging walks every visible memory once, newest first.
	var paged []schemas.Memory
	for off := 0; ; off += 3 {
		page, err := e.List(ctx, a, memory.ListOptions{Limit: 3, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 3 {
			t.Fatalf("page of %d with limit 3", len(page))
		}
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
	}
	if got, want := memIDs(paged), memIDs(newestFirst); !slices.Equal(got, want) {
		t.Fatalf("paged ids %v, want %v", got, want)
	}
	for _, m := range paged {
		if m.Vector != nil {
			t.Fatal("List returned vectors")
		}
	}

	for _, tc := range []struct {
		name string
		o    memory.ListOptions
		want []schemas.Memory
		err  error
	}{
		{"default limit 20", memory.ListOptions{}, newestFirst, nil},
		{"own scope", memory.ListOptions{Scope: "agent:A", Limit: 100}, inScope(newestFirst, "agent:A"), nil},
		{"global", memory.ListOptions{Scope: "global"}, inScope(newestFirst, "global"), nil},
		{"category", memory.ListOptions{Category: schemas.CategoryDecision}, inScope(newestFirst, "global"), nil},
		{"category in own scope", memory.ListOptions{Category: schemas.CategoryDecision, Scope: "agent:A"}, nil, nil},
		{"offset past end", memory.ListOptions{Offset: 50}, nil, nil},
		{"negative offset", memory.ListOptions{Offset: -5, Limit: 2}, newestFirst[:2], nil},
		{"huge limit", memory.ListOptions{Limit: 1 << 40}, newestFirst, nil},
		{"other agent's scope", memory.ListOptions{Scope: "agent:B"}, nil, engine.ErrScopeDenied},
		{"invalid scope", memory.ListOptions{Scope: "agent:*"}, nil, schemas.ErrInvalid},
		{"invalid category", memory.ListOptions{Category: "gossip"}, nil, schemas.ErrInvalid},
	} {
		got, err := e.List(ctx, a, tc.o)
		if tc.err != nil {
			if !errors.Is(err, tc.err) || len(got) != 0 {
				t.Errorf("%s: %d memories, err %v; want %v", tc.name, len(got), err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !slices.Equal(memIDs(got), memIDs(tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, memIDs(got), memIDs(tc.want))
		}
	}
}

func inScope(ms []schemas.Memory, scope string) []schemas.Memory {
	var out []schemas.Memory
	for _, m := range ms {
		if m.Scope == scope {
			out = append(out, m)
		}
	}
	return out
}

func TestStats(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, setup{scopes: isolationScopes})
	a := memory.Agent("A")
	mustStore(t, e, a, memory.StoreRequest{Text: "I prefer dark mode in every code editor"})
	mustStore(t, e, a, memory.StoreRequest{Text: "We decided to use Postgres for the billing service"})
	mustStore(t, e, a, memory.StoreRequest{Text: "The build server has 64 GB of memory", Scope: "global"})
	mustStore(t, e, memory.Agent("B"), memory.StoreRequest{Text: "B prefers light mode in the terminal"})
	mustStore(t, e, memory.Agent("C"), memory.StoreRequest{Text: "The shared drive is mounted at /mnt/team", Scope: "custom:shared"})

	st, err := e.Stats(ctx, a, "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Total != 3 || st.ByScope["agent:A"] != 2 || st.ByScope["global"] != 1 || len(st.ByScope) != 2 {
		t.Errorf("A's counts %+v", st.Stats)
	}
	if st.ByCategory["preference"] != 1 || st.ByCategory["decision"] != 1 || st.ByCategory["fact"] != 1 {
		t.Errorf("A's categories %v", st.ByCategory)
	}
	if !slices.Equal(st.Scopes, []string{"agent:A", "global"}) {
		t.Errorf("A's accessible scopes %v", st.Scopes)
	}
	if !st.FullText {
		t.Error("FullText false on SQLite")
	}
	want := retrieve.DefaultConfig()
	want.AutoRecallMinScore, want.AutoRecallMinMargin = 0.3, 0 // newEngine's
	if st.Dimensions != testDims || st.Embedding != "local-lexical" || st.Retrieval != want {
		t.Errorf("config part %+v", st)
	}
	if st.ScopeConfig.AgentsWithCustomAccess != 1 || st.ScopeConfig.TotalScopes != 2 {
		t.Errorf("scope config %+v", st.ScopeConfig)
	}

	st, err = e.Stats(ctx, memory.Agent("C"), "")
	if err != nil || st.Total != 2 || !slices.Equal(st.Scopes, []string{"custom:shared", "global"}) {
		t.Errorf("C: %+v, %v", st, err)
	}
	st, err = e.Stats(ctx, a, "global")
	if err != nil || st.Total != 1 || !slices.Equal(st.Scopes, []string{"global"}) {
		t.Errorf("A in global: %+v, %v", st, err)
	}
	// An agent with no memories yet still gets its scopes.
	st, err = e.Stats(ctx, memory.Agent("fresh-agent_1"), "")
	if err != nil || st.Total != 1 || !slices.Equal(st.Scopes, []string{"agent:fresh-agent_1", "global"}) {
		t.Errorf("new agent: %+v, %v", st, err)
	}
	st, err = e.Stats(ctx, memory.Admin(), "")
	if err != nil || st.Total != 5 || st.Scopes != nil || len(st.ByScope) != 4 {
		t.Errorf("admin: %+v, %v", st, err)
	}
	for _, tc := range []struct {
		scope string
		want  error
	}{{"agent:B", engine.ErrScopeDenied}, {"custom:shared", engine.ErrScopeDenied}, {"not valid!", schemas.ErrInvalid}} {
		if _, err := e.Stats(ctx, a, tc.scope); !errors.Is(err, tc.want) {
			t.Errorf("Stats(%q): err %v, want %v", tc.scope, err, tc.want)
		}
	}
}

type cachingEmbedder struct{ *fakeEmbedder }

func (cachingEmbedder) CacheStats() embed.CacheStats {
	return embed.CacheStats{Size: 3, Hits: 5, Misses: 2}
}

func TestStatsReportsEmbedderCache(t *testing.T) {
	ctx := context.Background()
	st, err := newEngine(t, setup{}).Stats(ctx, memory.Agent("A"), "")
	if err != nil || st.EmbedderInfo != nil {
		t.Fatalf("local embedder has no cache: %+v, %v", st.EmbedderInfo, err)
	}
	e := newEngine(t, setup{emb: cachingEmbedder{&fakeEmbedder{Embedder: localEmbedder(t)}}})
	st, err = e.Stats(ctx, memory.Agent("A"), "")
	if err != nil || st.EmbedderInfo == nil || *st.EmbedderInfo != (embed.CacheStats{Size: 3, Hits: 5, Misses: 2}) {
		t.Fatalf("cache stats %+v, %v", st.EmbedderInfo, err)
	}
}
