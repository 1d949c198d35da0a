// Package retrieve is clawmem's retrieval pipeline: vector and BM25 search
// run concurrently over a candidate pool, then fusion, minimum score,
// rerank, recency boost, importance weight, length normalisation, time
// decay, hard minimum, noise filter and MMR diversity, in that order. Each
// stage is a small pure function over a slice of candidates.
package retrieve

import (
	"fmt"
	"math"
)

// Modes of retrieval.
const (
	ModeHybrid = "hybrid"
	ModeVector = "vector"
)

// Rerank modes.
const (
	RerankCrossEncoder = "cross-encoder"
	RerankLightweight  = "lightweight"
	RerankNone         = "none"
)

// Config is the seed's retrieval.* block. Zero values are meaningful (0
// disables a stage where the seed says so); start from DefaultConfig.
type Config struct {
	Mode                  string  `json:"mode"`
	VectorWeight          float64 `json:"vectorWeight"`
	BM25Weight            float64 `json:"bm25Weight"`
	MinScore              float64 `json:"minScore"`
	Rerank                string  `json:"rerank"`
	CandidatePoolSize     int     `json:"candidatePoolSize"`
	RecencyHalfLifeDays   float64 `json:"recencyHalfLifeDays"`
	RecencyWeight         float64 `json:"recencyWeight"`
	FilterNoise           bool    `json:"filterNoise"`
	LengthNormAnchor      float64 `json:"lengthNormAnchor"`
	HardMinScore          float64 `json:"hardMinScore"`
	TimeDecayHalfLifeDays float64 `json:"timeDecayHalfLifeDays"`
}

// DefaultConfig is the seed's DEFAULT_RETRIEVAL_CONFIG.
func DefaultConfig() Config {
	return Config{
		Mode:                  ModeHybrid,
		VectorWeight:          0.7,
		BM25Weight:            0.3,
		MinScore:              0.3,
		Rerank:                RerankCrossEncoder,
		CandidatePoolSize:     20,
		RecencyHalfLifeDays:   14,
		RecencyWeight:         0.10,
		FilterNoise:           true,
		LengthNormAnchor:      500,
		HardMinScore:          0.35,
		TimeDecayHalfLifeDays: 60,
	}
}

// Validate reports the first out-of-range value, naming its config key.
func (c Config) Validate() error {
	switch c.Mode {
	case ModeHybrid, ModeVector:
	default:
		return fmt.Errorf("retrieval.mode is %q: want hybrid or vector", c.Mode)
	}
	switch c.Rerank {
	case RerankCrossEncoder, RerankLightweight, RerankNone:
	default:
		return fmt.Errorf("retrieval.rerank is %q: want cross-encoder, lightweight or none", c.Rerank)
	}
	for _, f := range []struct {
		key       string
		v, lo, hi float64
	}{
		{"retrieval.vectorWeight", c.VectorWeight, 0, 1},
		{"retrieval.bm25Weight", c.BM25Weight, 0, 1},
		{"retrieval.minScore", c.MinScore, 0, 1},
		{"retrieval.hardMinScore", c.HardMinScore, 0, 1},
		{"retrieval.recencyWeight", c.RecencyWeight, 0, 1},
		{"retrieval.recencyHalfLifeDays", c.RecencyHalfLifeDays, 0, 3650},
		{"retrieval.timeDecayHalfLifeDays", c.TimeDecayHalfLifeDays, 0, 36500},
		{"retrieval.lengthNormAnchor", c.LengthNormAnchor, 0, 100000},
		{"retrieval.candidatePoolSize", float64(c.CandidatePoolSize), 1, 1000},
	} {
		if math.IsNaN(f.v) || f.v < f.lo || f.v > f.hi {
			return fmt.Errorf("%s is %v: allowed range %v..%v", f.key, f.v, f.lo, f.hi)
		}
	}
	if c.VectorWeight+c.BM25Weight == 0 {
		return fmt.Errorf("retrieval.vectorWeight and retrieval.bm25Weight are both 0: at least one must be positive")
	}
	return nil
}
