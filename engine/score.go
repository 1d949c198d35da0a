package engine

import "math"

// VectorScore maps a cosine similarity to the seed's vector score:
// 1/(1+d) with d = 1 - cosine, the cosine distance.
func VectorScore(cosine float64) float64 { return 1 / (2 - cosine) }

// CosineForScore inverts VectorScore: the cosine whose score is score.
func CosineForScore(score float64) float64 { return 2 - 1/score }

// NormalizeBM25 maps a raw BM25 score (higher is better) into (0,1):
// 1/(1+exp(-raw/5)); a negative raw score counts as neutral, 0.5.
func NormalizeBM25(raw float64) float64 {
	if raw < 0 || math.IsNaN(raw) {
		return 0.5
	}
	return 1 / (1 + math.Exp(-raw/5))
}
