package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/storetest"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/schemas"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string, dim int) (engine.Store, error) {
		s, err := Open(context.Background(), dir, Options{Dimensions: dim})
		// The suite's full-text checks apply only to stores that have it;
		// this one must.
		if err == nil && !s.HasFullText() {
			t.Fatal("sqlitestore without full-text search")
		}
		return s, err
	})
}

func TestConformanceApproximate(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string, dim int) (engine.Store, error) {
		return Open(context.Background(), dir, Options{Dimensions: dim, Index: vecindex.Options{Mode: vecindex.IVF}})
	})
}

func TestSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), dir, Options{Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), dir, Options{Dimensions: 4}); !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("second open: want ErrLocked, got %v", err)
	}
	s.Close()
	s2, err := Open(context.Background(), dir, Options{Dimensions: 4})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	s2.Close()
}

// TestOpenWaitsForTheLock: with LockWait, an open outlasts a holder that
// lets go within the wait, and otherwise fails with ErrLocked once the
// wait is over (at once without one).
func TestOpenWaitsForTheLock(t *testing.T) {
	cases := []struct {
		name      string
		wait      time.Duration
		releaseIn time.Duration // 0: the holder keeps the lock
		cancel    bool
		want      error
		minTook   time.Duration
		notified  bool
	}{
		{name: "holder lets go within the wait", wait: 10 * time.Second, releaseIn: 400 * time.Millisecond, minTook: 400 * time.Millisecond, notified: true},
		{name: "holder keeps it", wait: 300 * time.Millisecond, want: engine.ErrLocked, minTook: 300 * time.Millisecond, notified: true},
		{name: "no wait", want: engine.ErrLocked},
		{name: "context ends the wait", wait: 10 * time.Second, cancel: true, want: context.Canceled, notified: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			holder, err := Open(context.Background(), dir, Options{Dimensions: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			if c.releaseIn > 0 {
				timer := time.AfterFunc(c.releaseIn, func() { holder.Close() })
				defer timer.Stop()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				time.AfterFunc(200*time.Millisecond, cancel)
			}
			notices := 0
			start := time.Now()
			s, err := Open(ctx, dir, Options{Dimensions: 4, LockWait: c.wait, OnLockWait: func(lock string, wait time.Duration) {
				if lock != filepath.Join(dir, "LOCK") || wait != c.wait {
					t.Errorf("notice for %s, %v", lock, wait)
				}
				notices++
			}})
			took := time.Since(start)
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("open: %v, want %v", err, c.want)
			}
			if took < c.minTook || took > c.minTook+5*time.Second {
				t.Fatalf("open took %v, want about %v", took, c.minTook)
			}
			if (notices == 1) != c.notified || notices > 1 {
				t.Fatalf("%d notices", notices)
			}
		})
	}
}

func TestNewStoreNeedsDimensions(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(context.Background(), dir, Options{}); err == nil {
		t.Fatal("a new store opened without dimensions")
	}
	s, err := Open(context.Background(), dir, Options{Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(context.Background(), dir, Options{})
	if err != nil || s.Dimensions() != 4 {
		t.Fatalf("reopen adopting stored dimensions: %v", err)
	}
	s.Close()
}

// TestCommonTermsLeftOutOfBM25: a word in (nearly) every memory costs a
// scan of the store and ranks nothing, so queries drop it.
func TestCommonTermsLeftOutOfBM25(t *testing.T) {
	s, err := Open(context.Background(), t.TempDir(), Options{Dimensions: storetest.Dim})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ms []schemas.Memory
	for i := 0; i < minCommonDocs+500; i++ {
		text := fmt.Sprintf("the note number %d", i)
		if i%1000 == 7 {
			text += " mentions zeppelin"
		}
		ms = append(ms, schemas.Memory{Text: text, Vector: storetest.Axis(i)})
	}
	if _, err := s.Add(context.Background(), ms...); err != nil {
		t.Fatal(err)
	}
	all := engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 10}
	res, err := s.TextSearch(context.Background(), "the zeppelin", all)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("got %d hits, want the 3 zeppelin notes", len(res))
	}
	for _, r := range res {
		if !strings.Contains(r.Memory.Text, "zeppelin") {
			t.Fatalf("hit %q matched only the common word", r.Memory.Text)
		}
	}
	if res, _ := s.TextSearch(context.Background(), "the note", all); len(res) != 0 {
		t.Fatalf("a query of only common words still ran: %d hits", len(res))
	}
}

func TestNeighbors(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), Options{Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const base = int64(1_800_000_000_000)
	mem := func(key int, scope string, ts int64) schemas.Memory {
		return schemas.Memory{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", key), Text: fmt.Sprintf("turn %d", key), Vector: []float32{1, 0},
			Category: schemas.CategoryFact, Scope: scope, Importance: 0.7, Timestamp: ts}
	}
	if err := s.Import(ctx,
		mem(1, "agent:a", base-3000), mem(2, "agent:a", base-2000), mem(3, "agent:a", base-1000), mem(4, "agent:a", base),
		mem(5, "agent:a", base+1000), mem(6, "agent:a", base+2000), mem(7, "agent:b", base+500), mem(8, "agent:a", base+900_000),
	); err != nil {
		t.Fatal(err)
	}
	texts := func(ms []schemas.Memory) string {
		var keys []string
		for _, m := range ms {
			keys = append(keys, m.Text)
			if len(m.Vector) != 2 {
				t.Errorf("%s without its vector", m.Text)
			}
		}
		return strings.Join(keys, ",")
	}
	a, b := engine.TimePoint{Scope: "agent:a", At: base}, engine.TimePoint{Scope: "agent:b", At: base + 500}
	late := engine.TimePoint{Scope: "agent:a", At: base + 2000}
	got, err := s.Neighbors(ctx, []engine.TimePoint{a, b, late}, 2, 600_000)
	if err != nil || len(got) != 3 {
		t.Fatal(got, err)
	}
	// Nearest first on each side; another scope and a memory outside the
	// window are never neighbours; the memory itself is not its own; each
	// point gets its own.
	if texts(got[0]) != "turn 3,turn 2,turn 5,turn 6" || len(got[1]) != 0 || texts(got[2]) != "turn 5,turn 4" {
		t.Fatalf("neighbours %q, %q, %q", texts(got[0]), texts(got[1]), texts(got[2]))
	}
	// More points than one statement holds, and none.
	many := make([]engine.TimePoint, 2*maxNeighborPoints+3)
	for i := range many {
		many[i] = []engine.TimePoint{a, b, late}[i%3]
	}
	got, err = s.Neighbors(ctx, many, 2, 600_000)
	if err != nil || len(got) != len(many) {
		t.Fatal(len(got), err)
	}
	for i := range many {
		if want := []string{"turn 3,turn 2,turn 5,turn 6", "", "turn 5,turn 4"}[i%3]; texts(got[i]) != want {
			t.Fatalf("point %d of %d: %q, want %q", i, len(many), texts(got[i]), want)
		}
	}
	if got, err := s.Neighbors(ctx, nil, 2, 600_000); err != nil || len(got) != 0 {
		t.Fatal(got, err)
	}
}

// A store made before memories had a life (no superseded_by, valid_from,
// invalidated_at columns) opens with them added and every memory current.
func TestOpenAddsHistoryColumns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, Options{Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := s.Add(ctx, schemas.Memory{Text: "I live in Paris", Scope: "global", Vector: []float32{1, 0, 0, 0}, Category: schemas.CategoryFact, Importance: 0.7})
	if err != nil {
		t.Fatal(err)
	}
	// Back to the old schema.
	for _, q := range []string{`DROP INDEX memories_by_successor`, `ALTER TABLE memories DROP COLUMN superseded_by`,
		`ALTER TABLE memories DROP COLUMN valid_from`, `ALTER TABLE memories DROP COLUMN invalidated_at`} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()
	s, err = Open(ctx, dir, Options{Dimensions: 4})
	if err != nil {
		t.Fatalf("reopen an old store: %v", err)
	}
	defer s.Close()
	got, err := s.Get(ctx, ms[0].ID, engine.AllScopes())
	if err != nil || !got.Current() || got.Text != "I live in Paris" {
		t.Fatalf("old memory %+v, %v", got, err)
	}
	if hits, err := s.VectorSearch(ctx, []float32{1, 0, 0, 0}, engine.SearchOptions{Scopes: engine.AllScopes()}); err != nil || len(hits) != 1 {
		t.Fatalf("old memory not searchable: %v %v", hits, err)
	}
}

// Every connection's page cache is bounded, and its mapping of the file is
// SQLite's ceiling, on connections opened later too (the pool opens them
// as readers come).
func TestPageCacheBounded(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), Options{Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conns := make([]*sql.Conn, maxConns)
	for i := range conns {
		if conns[i], err = s.db.Conn(ctx); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	for i, c := range conns {
		for _, tc := range []struct {
			pragma string
			want   int
		}{
			{"cache_size", -cacheKiB},
			{"mmap_size", mmapBytes},
		} {
			var got int
			if err := c.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("connection %d: %s = %d, want %d", i, tc.pragma, got, tc.want)
			}
		}
	}
}

// TestCoreListUsesItsIndex checks that listing a scope's core memories
// reads the partial index of them, not every memory of the scope: the
// condition List adds must be the index's own.
func TestCoreListUsesItsIndex(t *testing.T) {
	s, err := Open(context.Background(), t.TempDir(), Options{Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.db.QueryContext(context.Background(), `EXPLAIN QUERY PLAN SELECT `+listColumns+` FROM memories WHERE scope = ? AND 1 AND invalidated_at = 0 AND `+
		coreCond+` ORDER BY timestamp DESC, id DESC LIMIT ?`, "agent:a", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if len(plan) != 1 || !strings.Contains(plan[0], "memories_core") {
		t.Fatalf("plan %q does not read memories_core alone", plan)
	}
}

// Full-text search ranks without the join and filters by the index's
// groups; where the caller's scopes hold too few of the best matches it
// ranks again with the join. Either way the answer is the join's: the
// caller's best matches, in order, history only when asked for.
func TestTextSearchFiltersByScopeExactly(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), Options{Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	add := func(text, scope string) string {
		t.Helper()
		added, err := s.Add(ctx, schemas.Memory{Text: text, Vector: []float32{1, 0}, Category: schemas.CategoryFact, Scope: scope, Importance: 0.7})
		if err != nil {
			t.Fatal(err)
		}
		return added[0].ID
	}
	// Another agent's memories outrank main's (shorter texts score higher
	// in BM25), more than textOverfetch × the limit of them.
	for i := range 40 {
		add(fmt.Sprintf("kayak %d", i), "agent:other")
	}
	mainIDs := []string{
		add("kayak trip along the river last summer", "agent:main"),
		add("kayak trip along the river with the whole family last summer", "agent:main"),
		add("the kayak trip along the river with the whole family and the dog last summer", "agent:main"),
	}
	shared := add("kayak shop", schemas.GlobalScope)
	old := add("kayak rental by the lake", "agent:main")
	if _, err := s.Update(ctx, old, engine.Patch{Invalidate: &engine.Invalidation{At: time.Now().UnixMilli()}}, engine.AllScopes()); err != nil {
		t.Fatal(err)
	}
	ids := func(rs []engine.SearchResult) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Memory.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		scopes engine.ScopeFilter
		limit  int
		hist   bool
		want   []string
	}{
		{"few matches in the caller's scopes: the join decides", engine.InScopes("agent:main"), 5, false, mainIDs},
		{"with global", engine.InScopes("agent:main", schemas.GlobalScope), 2, false, []string{shared, mainIDs[0]}},
		{"history when asked for", engine.InScopes("agent:main"), 5, true, append([]string{old}, mainIDs...)},
		{"another agent's best, from the index's filter alone", engine.InScopes("agent:other"), 3, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := s.TextSearch(ctx, "kayak", engine.SearchOptions{Scopes: tc.scopes, Limit: tc.limit, History: tc.hist})
			if err != nil {
				t.Fatal(err)
			}
			got := ids(rs)
			if tc.want == nil { // three of the forty equally good others
				if len(got) != tc.limit {
					t.Fatalf("got %d results, want %d", len(got), tc.limit)
				}
				for _, r := range rs {
					if r.Memory.Scope != "agent:other" {
						t.Fatalf("a result of %s", r.Memory.Scope)
					}
				}
				return
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("got %v\nwant %v", got, tc.want)
			}
			for i := 1; i < len(rs); i++ {
				if rs[i].Score > rs[i-1].Score {
					t.Fatalf("not best first: %v", rs)
				}
			}
		})
	}
}
