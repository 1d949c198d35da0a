package lancestore

import (
	"cmp"
	"math"
	"slices"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// defaultLimit is the result count of a search that names none, as in the
// seed's tools.
const defaultLimit = 5

// maxCandidates caps the over-fetch (memory-lancedb-pro's cap).
const maxCandidates = 200

// candidates is how many rows a vector search asks LanceDB for:
// max(limit, min(limit·f, 200)), f = 10 with a scope filter (as
// memory-lancedb-pro over-fetches), else 2. lancedb-go sets no distance
// type, so LanceDB ranks by L2 distance to the unit query, which orders
// unit vectors exactly as cosine does; the extra rows let the exact cosine
// re-ranking repair the order for vectors of other lengths.
func candidates(limit int, filtered bool) int {
	f := 2
	if filtered {
		f = 10
	}
	return max(limit, min(limit*f, maxCandidates))
}

// unit returns v scaled to length 1 (a zero vector stays zero).
func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if n == 0 {
		return out
	}
	inv := 1 / math.Sqrt(n)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

// cosine is the cosine similarity of a and b, 0 when either is zero.
func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// rankVector scores candidate rows against query by exact cosine
// (score 1/(1+d), d = 1 - cosine) and returns the best o.Limit (default 5)
// at or above o.MinScore, best first. Rows that are not memories (an id that is not a
// UUID, a vector of another size) or that the scope filter does not allow
// — a second check behind the SQL one — are dropped.
func rankVector(ms []schemas.Memory, query []float32, o engine.SearchOptions) []engine.SearchResult {
	out := make([]engine.SearchResult, 0, len(ms))
	for _, m := range ms {
		if !schemas.IsUUID(m.ID) || len(m.Vector) != len(query) || !o.Scopes.Allows(m.Scope) {
			continue
		}
		cos := cosine(query, m.Vector)
		score := engine.VectorScore(cos)
		if score < o.MinScore {
			continue
		}
		out = append(out, engine.SearchResult{Memory: m, Score: score, Raw: cos})
	}
	sortResults(out)
	limit := o.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	return out[:min(len(out), limit)]
}

// sortResults orders results best first, ties by id so that equal scores
// come back in a stable order.
func sortResults(rs []engine.SearchResult) {
	slices.SortFunc(rs, func(a, b engine.SearchResult) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Memory.ID, b.Memory.ID)
	})
}
