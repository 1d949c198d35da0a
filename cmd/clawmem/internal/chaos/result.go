package chaos

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/nats-io/nats.go"
)

// Result is one scenario's outcome: a line of figures, pass or fail, and
// why it failed.
type Result struct {
	Scenario string  `json:"scenario"`
	Pass     bool    `json:"pass"`
	Skipped  string  `json:"skipped,omitempty"` // why it did not run
	Seconds  float64 `json:"seconds"`
	// Events is the tally of the load's events, for scenarios with one.
	Events *Tally `json:"events,omitempty"`
	// Figures are the scenario's own measurements.
	Figures  map[string]any `json:"figures,omitempty"`
	Summary  string         `json:"summary"`
	Failures []string       `json:"failures,omitempty"`
}

// fail records a failed check.
func (r *Result) fail(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

// checkTally fails r on any acknowledged event lost or duplicated, or any
// not acknowledged at all.
func (r *Result) checkTally(t Tally) {
	r.Events = &t
	if t.Acked != t.Offered {
		r.fail("%d of %d events never acknowledged", t.Offered-t.Acked, t.Offered)
	}
	if t.Lost > 0 {
		r.fail("%d acknowledged events lost", t.Lost)
	}
	if t.Dup > 0 {
		r.fail("%d events stored twice", t.Dup)
	}
}

// checkNoDLQ counts the dead-letter stream into t, then checks t as
// checkTally does and that nothing was dead-lettered.
func (r *Result) checkNoDLQ(ctx context.Context, nc *nats.Conn, t Tally) {
	var err error
	if t.DLQ, err = DLQCount(ctx, nc); err != nil {
		r.fail("counting the DLQ: %v", err)
	}
	r.checkTally(t)
	if t.DLQ > 0 {
		r.fail("%d messages dead-lettered", t.DLQ)
	}
}

func (r *Result) finish() {
	r.Pass = len(r.Failures) == 0 && r.Skipped == ""
}

// WriteText prints the scenario's line, and its failures.
func (r Result) WriteText(w io.Writer) error {
	verdict := "FAIL"
	switch {
	case r.Skipped != "":
		verdict = "skipped"
	case r.Pass:
		verdict = "pass"
	}
	line := r.Summary
	if r.Events != nil {
		t := r.Events
		texts := ""
		if t.Texts != t.Offered {
			texts = fmt.Sprintf(" (%d distinct texts)", t.Texts)
		}
		line = fmt.Sprintf("acked %d/%d%s stored %d lost %d dup %d dlq %d  %s", t.Acked, t.Offered, texts, t.Stored, t.Lost, t.Dup, t.DLQ, line)
	}
	if r.Skipped != "" {
		line = r.Skipped
	}
	fmt.Fprintf(w, "%-16s %-7s %5.0f s  %s\n", r.Scenario, verdict, r.Seconds, strings.TrimSpace(line))
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  - %s\n", f)
	}
	return nil
}

// Suite is the results of several scenarios.
type Suite struct {
	Results []Result `json:"results"`
	Pass    bool     `json:"pass"`
}

// WriteText prints each scenario's line.
func (s Suite) WriteText(w io.Writer) error {
	for _, r := range s.Results {
		r.WriteText(w)
	}
	verdict := "FAIL"
	if s.Pass {
		verdict = "pass"
	}
	fmt.Fprintf(w, "chaos: %d scenarios, %s\n", len(s.Results), verdict)
	return nil
}
