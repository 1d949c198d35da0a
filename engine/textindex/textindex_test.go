package textindex

import (
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine/fts"
	"github.com/clawmem/clawmem/engine/vecindex"
	_ "modernc.org/sqlite"
)

// corpus makes n documents over a Zipf vocabulary: a few words in most
// documents, most words in few.
func corpus(r *rand.Rand, n, vocab int) []string {
	z := rand.NewZipf(r, 1.1, 2, uint64(vocab-1))
	docs := make([]string, n)
	for i := range docs {
		words := make([]string, 3+r.IntN(25))
		for j := range words {
			words[j] = fmt.Sprintf("w%d", z.Uint64())
			if r.IntN(7) == 0 {
				words[j] = strings.ToUpper(words[j])
			}
		}
		docs[i] = strings.Join(words, " ")
	}
	return docs
}

// fts5 ranks like the store did before this index: FTS5's bm25() over a
// contentless table with the store's tokenizer.
type fts5 struct{ db *sql.DB }

func newFTS5(t *testing.T) *fts5 {
	t.Helper()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE VIRTUAL TABLE f USING fts5(body, content='', contentless_delete=1,
		tokenize='unicode61 remove_diacritics 2')`); err != nil {
		t.Fatal(err)
	}
	return &fts5{db}
}

func (f *fts5) put(t *testing.T, key int64, text string) {
	t.Helper()
	if _, err := f.db.Exec(`INSERT INTO f (rowid, body) VALUES (?, ?)`, key, text); err != nil {
		t.Fatal(err)
	}
}

func (f *fts5) remove(t *testing.T, key int64) {
	t.Helper()
	if _, err := f.db.Exec(`DELETE FROM f WHERE rowid = ?`, key); err != nil {
		t.Fatal(err)
	}
}

func (f *fts5) search(t *testing.T, terms []string, k int) []Hit {
	t.Helper()
	rows, err := f.db.Query(`SELECT rowid, -bm25(f) FROM f WHERE f MATCH ? ORDER BY bm25(f), rowid LIMIT ?`, fts.MatchTerms(terms), k)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []Hit
	for rows.Next() {
		var h Hit
		if err := rows.Scan(&h.Key, &h.Score); err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
	return out
}

func sameHits(a, b []Hit) bool {
	return slices.EqualFunc(a, b, func(x, y Hit) bool {
		return x.Key == y.Key && math.Abs(x.Score-y.Score) <= 1e-9*math.Max(1, math.Abs(y.Score))
	})
}

// The index scores exactly as FTS5's bm25() does, through inserts,
// replacements and deletions, so moving ranking out of SQLite changes no
// ranking and no normalised score.
func TestSearchMatchesFTS5(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	docs := corpus(r, 1000, 800)
	x, f := New(), newFTS5(t)
	for i, d := range docs {
		x.Put(int64(i+1), 0, d)
		f.put(t, int64(i+1), d)
	}
	// Churn: replace some, remove others, enough to compact posting lists.
	for i := 0; i < 500; i++ {
		key := int64(1 + r.IntN(len(docs)))
		if r.IntN(2) == 0 {
			x.Remove(key)
			f.remove(t, key)
			continue
		}
		text := corpus(r, 1, 800)[0]
		x.Put(key, 0, text)
		f.remove(t, key)
		f.put(t, key, text)
	}
	z := rand.NewZipf(r, 1.1, 2, 799)
	for q := 0; q < 200; q++ {
		terms := make([]string, 1+r.IntN(5))
		for i := range terms {
			terms[i] = fmt.Sprintf("w%d", z.Uint64())
		}
		k := 1 + r.IntN(20)
		want := f.search(t, terms, k)
		if got := x.Search(terms, k, nil); !sameHits(got, want) {
			t.Fatalf("query %q k=%d:\n got %v\nwant %v", terms, k, got, want)
		}
	}
	if x.Len() == 0 {
		t.Fatal("the churn removed everything")
	}
}

// Groups filter inside the ranking: the k best of the allowed groups, not
// the allowed among the k best.
func TestSearchFiltersByGroup(t *testing.T) {
	x := New()
	for i := range 100 {
		x.Put(int64(i), uint32(i%4), "apple banana")
	}
	x.Put(1000, 3, "apple apple apple")
	got := x.Search([]string{"apple"}, 5, vecindex.NewGroups(1))
	if len(got) != 5 {
		t.Fatalf("got %d hits, want 5", len(got))
	}
	for _, h := range got {
		if h.Key%4 != 1 {
			t.Fatalf("hit %d is outside group 1", h.Key)
		}
	}
	if x.SetGroup(1000, 1); x.Search([]string{"apple"}, 1, vecindex.NewGroups(1))[0].Key != 1000 {
		t.Fatal("a document moved to an allowed group is not found")
	}
	if x.SetGroup(5000, 1) {
		t.Fatal("SetGroup of an unknown key reports success")
	}
}

func TestRemoveAndRenumber(t *testing.T) {
	x := New()
	for i := range 5000 {
		x.Put(int64(i), 0, fmt.Sprintf("common t%d", i%10))
	}
	for i := range 4990 {
		if !x.Remove(int64(i)) {
			t.Fatalf("remove %d", i)
		}
	}
	if x.Remove(1) {
		t.Fatal("a second removal reports success")
	}
	if x.Len() != 10 || x.DocFreq("common") != 10 || x.DocFreq("t3") != 1 {
		t.Fatalf("len %d, df(common) %d, df(t3) %d", x.Len(), x.DocFreq("common"), x.DocFreq("t3"))
	}
	got := x.Search([]string{"common"}, 20, nil)
	if len(got) != 10 || got[0].Key != 4990 {
		t.Fatalf("after removals: %v", got)
	}
	if len(x.docs) > 2*x.Len()+1024 {
		t.Fatalf("%d ordinals for %d documents: removed ones were never reclaimed", len(x.docs), x.Len())
	}
}

func TestSearchEdges(t *testing.T) {
	x := New()
	if x.Search([]string{"a"}, 5, nil) != nil {
		t.Fatal("an empty index found something")
	}
	x.Put(1, 0, "")
	x.Put(2, 0, "Café au lait")
	if got := x.Search([]string{"cafe"}, 5, nil); len(got) != 1 || got[0].Key != 2 {
		t.Fatalf("cafe: %v", got)
	}
	if x.Search([]string{"missing"}, 5, nil) != nil || x.Search(nil, 5, nil) != nil || x.Search([]string{"cafe"}, 0, nil) != nil {
		t.Fatal("a query with nothing to find found something")
	}
}

// Searches run beside writes (the race detector checks the locking).
func TestConcurrentSearchAndWrite(t *testing.T) {
	x := New()
	r := rand.New(rand.NewPCG(3, 4))
	docs := corpus(r, 2000, 500)
	for i, d := range docs {
		x.Put(int64(i), uint32(i%3), d)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3000 {
			key := int64(i % 2500)
			if i%3 == 0 {
				x.Remove(key)
			} else {
				x.Put(key, uint32(i%3), docs[i%len(docs)])
			}
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
			return
		default:
		}
		for _, h := range x.Search([]string{"w2", "w3", fmt.Sprintf("w%d", i%400)}, 10, vecindex.NewGroups(1, 2)) {
			if h.Score <= 0 {
				t.Fatalf("hit %v has no score", h)
			}
		}
	}
}

func BenchmarkSearch(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := New()
	for i, d := range corpus(r, 100000, 30000) {
		x.Put(int64(i), uint32(i%8), d)
	}
	allow := vecindex.NewGroups(1, 2, 3)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		x.Search([]string{fmt.Sprintf("w%d", 50+i%500), fmt.Sprintf("w%d", 600+i%3000), fmt.Sprintf("w%d", 100+i%40)}, 20, allow)
	}
}
