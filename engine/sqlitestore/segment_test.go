package sqlitestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/schemas"
)

// answers is every query's top 10 ids over every scope, over one scope, and
// with history.
func answers(t *testing.T, s *Store, qs [][]float32) []string {
	t.Helper()
	var out []string
	for _, q := range qs {
		for _, o := range []engine.SearchOptions{{Scopes: engine.AllScopes(), Limit: 10}, {Scopes: engine.InScopes("agent:a"), Limit: 10},
			{Scopes: engine.AllScopes(), Limit: 10, History: true}} {
			res, err := s.VectorSearch(context.Background(), q, o)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range res {
				ids = append(ids, fmt.Sprintf("%s %.5f", r.Memory.ID, r.Score))
			}
			out = append(out, strings.Join(ids, ","))
		}
	}
	return out
}

func randUnit(rng *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// A cleanly closed store opens from its segment with the same answers and
// the same groups (a new scope after it gets a group of its own); any
// damage to the segment, a write after it was taken, or a crash makes the
// open load from the database instead, with the same answers again.
func TestSegmentOpen(t *testing.T) {
	ctx := context.Background()
	const dim = 16
	for name, io := range map[string]vecindex.Options{
		"exact": {Mode: vecindex.Exact},
		"ivf":   {Mode: vecindex.IVF, ExactBelow: 1, NList: 8},
		"int8":  {Mode: vecindex.IVF, ExactBelow: 1, NList: 8, Memory: vecindex.Int8},
	} {
		mode := io.Mode
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			o := Options{Dimensions: dim, Index: io}
			rng := rand.New(rand.NewPCG(8, 9))
			s, err := Open(ctx, dir, o)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Vectors(); got.From != "database" || got.Why != "a new store: normal on a first start" {
				t.Fatalf("first open: %+v", got)
			}
			var ms []schemas.Memory
			n := 300
			if mode == vecindex.IVF {
				n = 4500 // clustering starts at 4,096 rows
			}
			for i := range n {
				ms = append(ms, schemas.Memory{Text: fmt.Sprintf("memory %d", i), Vector: randUnit(rng, dim), Category: schemas.CategoryFact,
					Scope: []string{"agent:a", "agent:b", "global"}[i%3], Importance: 0.5})
			}
			added, err := s.Add(ctx, ms...)
			if err != nil {
				t.Fatal(err)
			}
			if io.Memory == vecindex.Int8 {
				// The rows added are in memory until a spill maps them
				// from the segment file.
				if u := s.ix.Unmapped(); u != n {
					t.Fatalf("%d rows unmapped after adding %d", u, n)
				}
				s.spillMin = 1
				s.maybeSpill()
				if u := s.ix.Unmapped(); u != 0 {
					t.Fatalf("%d rows unmapped after a spill (%v)", u, s.spillErr.Load())
				}
			}
			// History: one memory superseded.
			if _, err := s.Update(ctx, added[0].ID, engine.Patch{Invalidate: &engine.Invalidation{SupersededBy: added[3].ID, At: 1}}, engine.AllScopes()); err != nil {
				t.Fatal(err)
			}
			s.WaitIndex()
			var qs [][]float32
			for range 20 {
				qs = append(qs, randUnit(rng, dim))
			}
			want := answers(t, s, qs)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			reopen := func(wantFrom, why string) *Store {
				t.Helper()
				s, err := Open(ctx, dir, o)
				if err != nil {
					t.Fatal(err)
				}
				got := s.Vectors()
				if got.From != wantFrom || !strings.Contains(got.Why, why) {
					t.Fatalf("open: %+v, want from %s (%q)", got, wantFrom, why)
				}
				s.WaitIndex()
				if got := answers(t, s, qs); !slices.Equal(got, want) {
					t.Fatalf("answers after an open from the %s differ", wantFrom)
				}
				return s
			}
			// An open that only reads leaves the file as it was, and the
			// next open reads it again.
			before, err := os.Stat(filepath.Join(dir, SegmentFile))
			if err != nil {
				t.Fatal(err)
			}
			s = reopen("segment", "")
			if _, err := s.Update(ctx, added[5].ID, engine.Patch{Importance: new(0.9)}, engine.AllScopes()); err != nil {
				t.Fatal(err) // not a vector or group: the segment still holds
			}
			s.Close()
			after, err := os.Stat(filepath.Join(dir, SegmentFile))
			if err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
				t.Fatalf("a close with the index unchanged rewrote the segment (%v)", err)
			}
			s = reopen("segment", "")
			if mode == vecindex.IVF && !s.ix.Trained() {
				t.Fatal("the clustering was not loaded with the segment")
			}
			// A scope new since: its own group, not another's.
			if _, err := s.Add(ctx, schemas.Memory{Text: "new scope", Vector: randUnit(rng, dim), Category: schemas.CategoryFact, Scope: "agent:c", Importance: 0.5}); err != nil {
				t.Fatal(err)
			}
			res, err := s.VectorSearch(ctx, qs[0], engine.SearchOptions{Scopes: engine.InScopes("agent:c"), Limit: 10})
			if err != nil || len(res) != 1 || res[0].Memory.Scope != "agent:c" {
				t.Fatalf("the new scope's search: %+v %v", res, err)
			}
			ms = nil
			if _, err := s.Delete(ctx, res[0].Memory.ID, engine.AllScopes()); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			// A bit flipped in the vectors: refused, loaded from the database.
			path := filepath.Join(dir, SegmentFile)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x10
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			reopen("database", "bad segment").Close()
			// That close wrote a good segment again.
			reopen("segment", "").Close()
			// Truncated.
			if err := os.Truncate(path, 100); err != nil {
				t.Fatal(err)
			}
			reopen("database", "bad segment").Close()

			// A crash after an open from the segment: the record is spent,
			// so the next open reads the database (with the write made
			// before the crash).
			s = reopen("segment", "")
			if _, err := s.Update(ctx, added[1].ID, engine.Patch{Vector: randUnit(rng, dim)}, engine.AllScopes()); err != nil {
				t.Fatal(err)
			}
			s.WaitIndex()
			want = answers(t, s, qs)
			s.db.Close() // no Close: no segment, no record
			unlockDir(s.lock)
			reopen("database", "no segment").Close()

			// An open without the segment spends the record too.
			s = reopen("segment", "")
			s.Close()
			ns, err := Open(ctx, dir, Options{Dimensions: dim, Index: o.Index, NoSegment: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ns.Update(ctx, added[2].ID, engine.Patch{Vector: randUnit(rng, dim)}, engine.AllScopes()); err != nil {
				t.Fatal(err)
			}
			ns.WaitIndex()
			want = answers(t, ns, qs)
			ns.Close()
			reopen("database", "no segment").Close()
		})
	}
}

// An approximate index says from how many rows it trains, so that a small
// store's exact search reads as what it is: the normal state, not a fault.
func TestIndexStateSaysWhenIVFTrains(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		io   vecindex.Options
		kind string
		want int
	}{
		{vecindex.Options{Mode: vecindex.IVF, ExactBelow: 20_000}, "ivf", 20_000},
		{vecindex.Options{Mode: vecindex.IVF}, "ivf", 4096},
		{vecindex.Options{Mode: vecindex.Exact}, "exact", 0},
	} {
		s, err := Open(ctx, t.TempDir(), Options{Dimensions: 8, Index: c.io})
		if err != nil {
			t.Fatal(err)
		}
		is := s.IndexState()
		s.Close()
		if is.Kind != c.kind || is.Trained || is.TrainsAt != c.want {
			t.Errorf("%+v: index state %+v, want kind %s training at %d", c.io, is, c.kind, c.want)
		}
	}
}
