package sqlitestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

func benchMemories(rng *rand.Rand, n, dim int) []schemas.Memory {
	out := make([]schemas.Memory, n)
	for i := range out {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		out[i] = schemas.Memory{Text: fmt.Sprintf("benchmark memory %d about docker and tea", rng.Int()), Vector: v, Scope: "global"}
	}
	return out
}

// BenchmarkAddBatch500 measures the batched single writer (500 memories a
// transaction, as the store worker batches) at 1024 dimensions.
func BenchmarkAddBatch500(b *testing.B) {
	s, err := Open(context.Background(), b.TempDir(), Options{Dimensions: 1024})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	batch := benchMemories(rng, 500, 1024)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Add(context.Background(), batch...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(500*b.N)/b.Elapsed().Seconds(), "memories/s")
}

// BenchmarkTextSearch measures BM25 over 20,000 memories.
func BenchmarkTextSearch(b *testing.B) {
	s, err := Open(context.Background(), b.TempDir(), Options{Dimensions: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(2, 2))
	for i := 0; i < 40; i++ {
		if _, err := s.Add(context.Background(), benchMemories(rng, 500, 8)...); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.TextSearch(context.Background(), "docker tea", engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 20}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListCore measures auto-recall's core-fact lookup: the newest
// three core memories of an agent's scope and global among 100,000, of
// which 1 in 1,000 is core.
func BenchmarkListCore(b *testing.B) {
	s, err := Open(context.Background(), b.TempDir(), Options{Dimensions: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(3, 3))
	for i := 0; i < 200; i++ {
		batch := benchMemories(rng, 500, 8)
		for j := range batch {
			batch[j].Scope = []string{"global", "agent:a"}[j%2]
			if j%1000 == 7 || (i%2 == 0 && j == 250) {
				batch[j].Metadata = []byte(`{"core":true}`)
			}
		}
		if _, err := s.Add(context.Background(), batch...); err != nil {
			b.Fatal(err)
		}
	}
	o := engine.ListOptions{Scopes: engine.InScopes("agent:a", "global"), Limit: 3, Core: true}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if ms, err := s.List(context.Background(), o); err != nil || len(ms) != 3 {
			b.Fatalf("%d core memories, %v", len(ms), err)
		}
	}
}
