package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// Change is one figure of a run against the same figure of a baseline
// run: Ratio is now / before, and Better says which way is good.
type Change struct {
	Figure string  `json:"figure"`
	Before float64 `json:"before"`
	Now    float64 `json:"now"`
	Ratio  float64 `json:"ratio"`
	Better string  `json:"better"` // "lower" or "higher"
}

// LoadStoreBaseline reads a StoreReport that an earlier
// `clawmem bench store --json` printed.
func LoadStoreBaseline(path string) (StoreReport, error) {
	var base StoreReport
	b, err := os.ReadFile(path)
	if err != nil {
		return base, fmt.Errorf("baseline: %w", err)
	}
	if err := json.Unmarshal(b, &base); err != nil {
		return base, fmt.Errorf("baseline %s is not `clawmem bench store --json` output: %w", path, err)
	}
	return base, nil
}

// Compare sets the report's changes against base: every figure both runs
// measured (a zero on either side is left out).
func (r *StoreReport) Compare(base StoreReport) {
	ms := func(d time.Duration) float64 { return Ms(d) }
	figures := []struct {
		name      string
		now, then float64
		better    string
	}{
		{"exact top-10 p50 (ms)", ms(r.Index.ExactP50), ms(base.Index.ExactP50), "lower"},
		{"exact top-10 p99 (ms)", ms(r.Index.ExactP99), ms(base.Index.ExactP99), "lower"},
		{"exact p50 / floor", r.ExactRatio[0], base.ExactRatio[0], "lower"},
		{"IVF top-10 p50 (ms)", ms(r.Index.IVFP50), ms(base.Index.IVFP50), "lower"},
		{"IVF top-10 p99 (ms)", ms(r.Index.IVFP99), ms(base.Index.IVFP99), "lower"},
		{"IVF recall@10", r.Index.IVFRecall10, base.Index.IVFRecall10, "higher"},
		{"IVF build (s)", r.Index.IVFBuild.Seconds(), base.Index.IVFBuild.Seconds(), "lower"},
		{"bulk load (memories/s)", r.LoadRate, base.LoadRate, "higher"},
		{"insert at N (memories/s)", r.InsertRate, base.InsertRate, "higher"},
		{"cold open (s)", r.Open.OpenSeconds, base.Open.OpenSeconds, "lower"},
		{"cold open from the database (s)", r.OpenDatabase.OpenSeconds, base.OpenDatabase.OpenSeconds, "lower"},
		{"RSS after open (MB)", r.Open.RSSMB, base.Open.RSSMB, "lower"},
		{"store search p50 (ms)", r.Open.SearchP50ms, base.Open.SearchP50ms, "lower"},
		{"approximate index training (s)", r.IVFTrainSeconds, base.IVFTrainSeconds, "lower"},
		{"int8 codes' training (s)", r.Int8TrainSeconds, base.Int8TrainSeconds, "lower"},
		{"float32: first exact answer (s)", r.OpenIVF.FirstExactSeconds, base.OpenIVF.FirstExactSeconds, "lower"},
		{"float32: first approximate answer (s)", r.OpenIVF.FirstIVFSeconds, base.OpenIVF.FirstIVFSeconds, "lower"},
		{"float32: RSS after queries (MB)", r.OpenIVF.QueriedMem.RSS, base.OpenIVF.QueriedMem.RSS, "lower"},
		{"int8: first exact answer (s)", r.OpenInt8.FirstExactSeconds, base.OpenInt8.FirstExactSeconds, "lower"},
		{"int8: first approximate answer (s)", r.OpenInt8.FirstIVFSeconds, base.OpenInt8.FirstIVFSeconds, "lower"},
		{"int8: RSS after queries (MB)", r.OpenInt8.QueriedMem.RSS, base.OpenInt8.QueriedMem.RSS, "lower"},
		{"int8: store recall@10", r.OpenInt8.Recall10, base.OpenInt8.Recall10, "higher"},
		{"float32: hybrid retrieval p50 (ms)", r.OpenIVF.HybridP50ms, base.OpenIVF.HybridP50ms, "lower"},
		{"int8: hybrid retrieval p50 (ms)", r.OpenInt8.HybridP50ms, base.OpenInt8.HybridP50ms, "lower"},
	}
	r.Changes = nil
	for _, f := range figures {
		if f.now == 0 || f.then == 0 {
			continue
		}
		r.Changes = append(r.Changes, Change{Figure: f.name, Before: f.then, Now: f.now, Ratio: f.now / f.then, Better: f.better})
	}
}

// writeChanges prints the comparison with a baseline, if any.
func writeChanges(w io.Writer, cs []Change) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(w, "against the baseline (now / before)")
	for _, c := range cs {
		verdict := "better"
		if (c.Better == "lower") == (c.Ratio > 1) {
			verdict = "worse"
		}
		if c.Ratio > 0.95 && c.Ratio < 1.05 {
			verdict = "same"
		}
		fmt.Fprintf(w, "  %-34s %10.3f -> %10.3f  x%.2f %s\n", c.Figure, c.Before, c.Now, c.Ratio, verdict)
	}
}
