package portable

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/schemas"
)

// BenchmarkExportJSONL writes memories as the export does, from memory, to
// measure the writer alone.
func BenchmarkExportJSONL(b *testing.B) {
	ms := benchMemories(10000, 0)
	w, _ := NewWriter(discard{}, WriterOptions{})
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := w.Write(ms[i%len(ms)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "memories/s")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// benchMemories makes n memories over 5 scopes whose texts share few
// words, so that none is a near-duplicate of another under the lexical
// embedder; with dims > 0 each carries a vector.
func benchMemories(n, dims int) []schemas.Memory {
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	out := make([]schemas.Memory, n)
	for i := range out {
		out[i] = schemas.Memory{ID: uuid.NewString(), Text: benchText(rng, i), Category: schemas.Categories[i%len(schemas.Categories)],
			Scope: fmt.Sprintf("custom:s%d", i%5), Importance: float64(i%10) / 10, Timestamp: 1700000000000 + int64(i)*1000,
			Metadata: []byte(`{"source":"bench"}`)}
		if dims > 0 {
			out[i].Vector = make([]float32, dims)
			for j := range out[i].Vector {
				out[i].Vector[j] = float32(rng.NormFloat64())
			}
		}
	}
	return out
}

// BenchmarkExportStore streams 50,000 memories (384 dimensions) out of a
// real store into the JSONL writer, as `clawmem export` does, without and
// with their vectors.
func BenchmarkExportStore(b *testing.B) {
	if testing.Short() {
		b.Skip("loads 50,000 memories")
	}
	const n = 50000
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, b.TempDir(), sqlitestore.Options{Dimensions: testDims})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ms := benchMemories(n, testDims)
	for i := 0; i < n; i += 5000 {
		if err := st.Import(ctx, ms[i:i+5000]...); err != nil {
			b.Fatal(err)
		}
	}
	for _, vectors := range []bool{false, true} {
		b.Run(fmt.Sprintf("vectors=%v", vectors), func(b *testing.B) {
			for b.Loop() {
				w, _ := NewWriter(discard{}, WriterOptions{WithVectors: vectors})
				if err := st.Iterate(ctx, engine.IterateOptions{Scopes: engine.AllScopes(), WithVectors: vectors}, w.Write); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil || w.Count() != n {
					b.Fatal(err, w.Count())
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "memories/s")
		})
	}
}

// BenchmarkImportLocal imports 10,000 memories without vectors into an
// empty store with the local embedder, in batches of 1,000, dedup on.
func BenchmarkImportLocal(b *testing.B) {
	const n, batch = 10000, 1000
	ctx := context.Background()
	emb := newCountingEmbedder(b)
	ms := benchMemories(n, 0)
	recs := make([]Record, n)
	for i, m := range ms {
		recs[i] = Record{Line: i + 1, Memory: m}
	}
	for b.Loop() {
		b.StopTimer()
		st, err := sqlitestore.Open(ctx, b.TempDir(), sqlitestore.Options{Dimensions: testDims})
		if err != nil {
			b.Fatal(err)
		}
		im := NewImporter(st, emb, ImportOptions{Dedup: DefaultDedup})
		b.StartTimer()
		var rep Report
		for i := 0; i < n; i += batch {
			res, err := im.Import(ctx, recs[i:i+batch])
			if err != nil {
				b.Fatal(err)
			}
			rep.Add(res)
		}
		b.StopTimer()
		if rep.Imported != n {
			b.Fatalf("imported %d of %d: %+v", rep.Imported, n, rep.Skips[:min(3, len(rep.Skips))])
		}
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "memories/s")
}

var syllables = strings.Fields("ka lo mi ne ru ta shi po va de gi zu fe ho ja ki le mo nu pa ri so tu ve wa xo yi ze bra cle dro fli gro")

// benchText makes the i-th text of a synthetic corpus for benchmarks and
// tests: ten made-up words, so that two texts share almost no words and no
// two are near-duplicates under any embedder.
func benchText(rng *rand.Rand, i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "note %d:", i)
	for range 10 {
		b.WriteByte(' ')
		for range 2 + rng.IntN(3) {
			b.WriteString(syllables[rng.IntN(len(syllables))])
		}
	}
	return b.String()
}
