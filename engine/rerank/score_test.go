package rerank

import (
	"math"
	"testing"
)

func near(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			return false
		}
	}
	return true
}

func TestBlend(t *testing.T) {
	tests := []struct {
		name   string
		c      []Candidate
		scores []Score
		want   []float64
	}{
		{"returned blend 0.6/0.4, left out get 0.8x",
			[]Candidate{{Fused: 0.5}, {Fused: 0.9}, {Fused: 0.4}},
			[]Score{{0, 0.9}, {2, 0.1}},
			[]float64{0.6*0.9 + 0.4*0.5, 0.8 * 0.9, 0.6*0.1 + 0.4*0.4}}, // 0.74, 0.72, 0.22
		{"reranker returns nothing",
			[]Candidate{{Fused: 0.5}, {Fused: 1}},
			nil,
			[]float64{0.4, 0.8}},
		{"logit scores clamped before mixing",
			[]Candidate{{Fused: 0.5}, {Fused: 0.5}},
			[]Score{{0, 3.2}, {1, -4}},
			[]float64{0.8, 0.2}},
		{"fused overshoot clamped",
			[]Candidate{{Fused: 1.15}, {Fused: 1.15}, {Fused: math.NaN()}},
			[]Score{{1, 1}},
			[]float64{0.8, 1, 0}},
		{"out-of-range indexes ignored, first duplicate wins",
			[]Candidate{{Fused: 0.5}, {Fused: 0.5}},
			[]Score{{-1, 1}, {2, 1}, {1, 0.5}, {1, 1}},
			[]float64{0.4, 0.5}},
		{"no candidates", nil, []Score{{0, 1}}, []float64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Blend(tc.c, tc.scores); !near(got, tc.want) {
				t.Fatalf("Blend = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFallback(t *testing.T) {
	tests := []struct {
		name string
		c    []Candidate
		want []float64
	}{
		{"0.7 fused + 0.3 cosine",
			[]Candidate{{0.5, 0.9}, {0.9, 0.1}, {0.4, 0.4}},
			[]float64{0.62, 0.66, 0.4}},
		{"negative cosine counts as 0", []Candidate{{0.8, -0.4}}, []float64{0.56}},
		{"clamped", []Candidate{{1.2, 1}, {math.NaN(), 0.5}}, []float64{1, 0.15}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Fallback(tc.c); !near(got, tc.want) {
				t.Fatalf("Fallback = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFallbackChangesRanking guards against the plugin's bug, where the
// fallback returned the fused scores untouched: a semantically close memory
// must overtake a slightly better fused one.
func TestFallbackChangesRanking(t *testing.T) {
	c := []Candidate{{Fused: 0.60, Cosine: 0.10}, {Fused: 0.55, Cosine: 0.95}}
	got := Fallback(c)
	for i := range c {
		if got[i] == c[i].Fused {
			t.Errorf("candidate %d kept its fused score %v", i, got[i])
		}
	}
	if !(got[1] > got[0]) {
		t.Fatalf("Fallback = %v; the high-cosine candidate should rank first", got)
	}
}

func TestLightweight(t *testing.T) {
	tests := []struct {
		name  string
		query string
		docs  []string
		fused []float64
		want  []float64
	}{
		{"full, partial and no overlap",
			"Where is the JINA api key?",
			[]string{"where is the jina-api key: in .env", "the api key", "nothing relevant"},
			[]float64{0.5, 0.5, 0.5},
			// 6 query terms: where is the jina api key → 6/6, 3/6, 0/6
			[]float64{0.8*0.5 + 0.2, 0.8*0.5 + 0.1, 0.4}},
		{"case-insensitive, repeated query terms count once",
			"Coffee coffee PREFERENCE",
			[]string{"prefers coffee"},
			[]float64{0.5},
			[]float64{0.8*0.5 + 0.2*0.5}},
		{"whole words only", "cat", []string{"category"}, []float64{0.5}, []float64{0.4}},
		{"CJK by character",
			"喜欢咖啡",
			[]string{"我喜欢喝茶", "用户每天早上喝咖啡"},
			[]float64{0.5, 0.5},
			[]float64{0.8*0.5 + 0.2*0.5, 0.8*0.5 + 0.2*0.5}},
		{"mixed scripts", "JINA 密钥", []string{"jina的密钥在env里"}, []float64{0.5}, []float64{0.6}},
		{"vowel signs stay inside their word",
			"हिंदी भाषा",
			[]string{"मुझे हिंदी पसंद है", "हद"},
			[]float64{0.5, 0.5},
			[]float64{0.8*0.5 + 0.2*0.5, 0.4}},
		{"termless query leaves fused alone", "?!", []string{"a"}, []float64{0.3, 1.4}, []float64{0.3, 1}},
		{"missing document has no overlap", "tea", nil, []float64{0.5}, []float64{0.4}},
		{"clamped", "tea", []string{"tea", "tea"}, []float64{1.3, math.NaN()}, []float64{1, 0.2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Lightweight(tc.query, tc.docs, tc.fused); !near(got, tc.want) {
				t.Fatalf("Lightweight = %v, want %v", got, tc.want)
			}
		})
	}
}
