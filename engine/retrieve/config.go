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
	// AutoRecallMinScore is the final score a memory needs to enter the
	// auto-recall block (<relevant-memories>): clawmem's own key, calibrated
	// on its scores (DefaultAutoRecallMinScore).
	AutoRecallMinScore float64 `json:"autoRecallMinScore"`
	// Session-neighbour expansion (clawmem's own keys): the NeighborHits
	// best candidates bring in up to NeighborsPerSide memories on each side
	// of them in time (same scope, within NeighborWindowMinutes), scored
	// NeighborFactor × the hit's score. A conversation's answer is often the
	// turn after the one that matches the question. NeighborHits 0 turns it
	// off; stores without Neighbors (LanceDB) skip it.
	NeighborHits          int     `json:"neighborHits"`
	NeighborsPerSide      int     `json:"neighborsPerSide"`
	NeighborFactor        float64 `json:"neighborFactor"`
	NeighborWindowMinutes float64 `json:"neighborWindowMinutes"`
}

// DefaultAutoRecallMinScore is auto-recall's threshold on the final score:
// the block is precision-oriented and may carry nothing. Calibrated with
// the sweep `clawmem eval --json` reports, on testdata/eval (5
// conversations months old, clawmem's default retrieval): at 0.80 the
// injected memories are evidence or next to it 90% of the time with
// semantic embeddings (USE-lite) and questions about things never said get
// an empty block 100% of the time (the local embedder passes nothing that
// old at 0.80; at 0.725 it is 80% / 96%); at 0.75 semantic precision is
// 66%, at 0.70 54%, and at the seed's 0.3 three of four injected memories
// are unrelated and no block is ever empty. The price is a block that is
// rarely filled for old memories; recent ones pass more easily (recency
// lift).
const DefaultAutoRecallMinScore = 0.80

// SeedConfig is the seed's DEFAULT_RETRIEVAL_CONFIG: what a configuration
// copied from memory-lancedb-pro asks for, and what each key means when it
// is given explicitly. Keys the seed does not have keep clawmem's defaults.
func SeedConfig() Config {
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
		// The seed has none of these keys: clawmem's defaults.
		AutoRecallMinScore:    DefaultAutoRecallMinScore,
		NeighborHits:          3,
		NeighborsPerSide:      2,
		NeighborFactor:        0.85,
		NeighborWindowMinutes: 10,
	}
}

// DefaultConfig is clawmem's default: the seed's, except that nothing
// makes an old but relevant memory unreachable. The seed's absolute
// cut-offs (minScore 0.3 before rerank, hardMinScore 0.35 at the end) and
// its time decay (×0.5 for a memory a season old) together drop every
// memory a few months old: on a long-conversation benchmark they took
// recall@10 from 0.56 to 0.10 (0.01 with the local embedder). So recall
// returns the best `limit` results whatever their age, recency still
// lifts recent memories (a boost, never a cut) and time decay is off;
// auto-recall has its own threshold, calibrated on clawmem's scores
// (retrieval.autoRecallMinScore). A configuration that sets the seed's keys gets
// the seed's behaviour.
func DefaultConfig() Config {
	c := SeedConfig()
	c.MinScore = 0
	c.HardMinScore = 0
	c.TimeDecayHalfLifeDays = 0
	return c
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
		{"retrieval.autoRecallMinScore", c.AutoRecallMinScore, 0, 1},
		{"retrieval.neighborHits", float64(c.NeighborHits), 0, 20},
		{"retrieval.neighborsPerSide", float64(c.NeighborsPerSide), 0, 10},
		{"retrieval.neighborFactor", c.NeighborFactor, 0, 1},
		{"retrieval.neighborWindowMinutes", c.NeighborWindowMinutes, 0, 1440},
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
