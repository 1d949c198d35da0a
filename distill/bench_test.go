package distill

import (
	"context"
	"testing"
	"time"
)

// longSession repeats a fixture until it has n messages, numbered 1..n.
func longSession(b *testing.B, n int) []Message {
	base := loadFixture(b, "english_debug_session.jsonl")
	out := make([]Message, n)
	for i := range out {
		out[i] = base[i%len(base)]
		out[i].N = i + 1
	}
	return out
}

// BenchmarkDistillLongSession distils a 2,000-message session against an
// in-process model that takes 500 ms per call. Target: total time within
// 1.5 × (chunks / parallelism) × 0.5 s + 2 s, i.e. map calls overlap as
// configured and everything else is small.
func BenchmarkDistillLongSession(b *testing.B) {
	const callTime = 500 * time.Millisecond
	msgs := longSession(b, 2000)
	llm := &brainLLM{delay: callTime, tokens: 3000}
	d := New(Config{}, llm, localEmbedder(b))
	var res Result
	var total time.Duration
	runs := 0
	for b.Loop() {
		start := time.Now()
		var err error
		res, err = d.Distill(context.Background(), msgs, Options{})
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		runs++
	}
	chunks, parallelism := float64(res.Stats.Chunks), float64(d.cfg.Parallelism)
	seconds := total.Seconds() / float64(runs)
	target := 1.5*(chunks/parallelism)*callTime.Seconds() + 2
	met := 0.0
	if seconds <= target {
		met = 1
	}
	b.ReportMetric(chunks, "chunks")
	b.ReportMetric(parallelism, "parallelism")
	b.ReportMetric(seconds, "s/session")
	b.ReportMetric(target, "target-s")
	b.ReportMetric(met, "target-met")
	b.ReportMetric(float64(len(res.Lessons)), "lessons")
}
