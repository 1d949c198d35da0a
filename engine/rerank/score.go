package rerank

import (
	"math"
	"strings"
	"unicode"
)

// Candidate is what the blending functions need to know about one retrieval
// result.
type Candidate struct {
	Fused  float64 // the fused retrieval score, in [0,1]
	Cosine float64 // cosine(query vector, memory vector), in [-1,1]
}

// Weights from the seed's retrieval pipeline; Lightweight's are clawmem's own.
const (
	rerankWeight      = 0.6
	unreturnedFactor  = 0.8
	fallbackWeight    = 0.7
	lightweightWeight = 0.8
)

// Blend gives candidate i clamp01(0.6·rerank + 0.4·fused) when scores has an
// entry for i, and clamp01(0.8·fused) when the reranker left it out.
//
// Inputs are clamped to [0,1] before mixing: some cross-encoders return raw
// logits, and a logit of −4 must read as "irrelevant", not drag the fused
// share below zero. Entries with an index outside c are ignored and the first
// entry for an index wins, so hand-built scores cannot corrupt the result.
func Blend(c []Candidate, scores []Score) []float64 {
	rerank := make(map[int]float64, len(scores))
	for _, s := range scores {
		if _, dup := rerank[s.Index]; !dup && s.Index >= 0 && s.Index < len(c) {
			rerank[s.Index] = s.Score
		}
	}
	out := make([]float64, len(c))
	for i, cand := range c {
		if r, ok := rerank[i]; ok {
			out[i] = mix(rerankWeight, r, cand.Fused)
		} else {
			out[i] = clamp01(unreturnedFactor * clamp01(cand.Fused))
		}
	}
	return out
}

// Fallback gives each candidate clamp01(0.7·fused + 0.3·max(cosine, 0)), for
// when the reranker timed out or failed. A negative cosine counts as 0 so an
// anti-correlated memory is not pushed below an unrelated one's floor.
func Fallback(c []Candidate) []float64 {
	out := make([]float64, len(c))
	for i, cand := range c {
		out[i] = mix(fallbackWeight, cand.Fused, cand.Cosine)
	}
	return out
}

// Lightweight is the network-free `rerank: "lightweight"` mode: document i
// scores clamp01(0.8·fused[i] + 0.2·overlap), where overlap is the fraction
// of the query's distinct terms that occur in docs[i]. Terms are lower-cased
// runs of letters and digits, plus every CJK character on its own, since
// Chinese and Japanese text has no spaces to split words on. Whole terms are
// matched, so "cat" does not match "category".
//
// It returns one score per fused entry; a missing document has no overlap. A
// query with no terms (only punctuation, say) leaves the fused scores as they
// are rather than docking every candidate by the same 20%.
func Lightweight(query string, docs []string, fused []float64) []float64 {
	q := terms(query)
	out := make([]float64, len(fused))
	for i, f := range fused {
		if len(q) == 0 {
			out[i] = clamp01(f)
			continue
		}
		var doc map[string]bool
		if i < len(docs) {
			doc = terms(docs[i])
		}
		hits := 0
		for t := range q {
			if doc[t] {
				hits++
			}
		}
		out[i] = mix(lightweightWeight, f, float64(hits)/float64(len(q)))
	}
	return out
}

// terms splits s into the distinct terms Lightweight matches on.
func terms(s string) map[string]bool {
	set := make(map[string]bool)
	var word strings.Builder
	flush := func() {
		if word.Len() > 0 {
			set[word.String()] = true
			word.Reset()
		}
	}
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
			flush()
			set[string(r)] = true
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word.WriteRune(unicode.ToLower(r))
		case unicode.IsMark(r) && word.Len() > 0:
			// Vowel signs (Devanagari, Thai) and decomposed accents are
			// marks; splitting on them would shred words into consonants.
			word.WriteRune(r)
		default:
			flush()
		}
	}
	flush()
	return set
}

// mix returns clamp01(w·clamp01(a) + (1−w)·clamp01(b)). The outer clamp only
// absorbs floating-point rounding at the ends of the range.
func mix(w, a, b float64) float64 {
	return clamp01(w*clamp01(a) + (1-w)*clamp01(b))
}

// clamp01 maps NaN to 0 so one bad upstream score cannot poison a sort.
func clamp01(x float64) float64 {
	if math.IsNaN(x) || x < 0 {
		return 0
	}
	return math.Min(x, 1)
}
