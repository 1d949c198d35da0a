package rules

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"
)

// labelledExample is one line of testdata/capture_labelled.tsv.
type labelledExample struct {
	lang, text string
	capture    bool
	line       int
}

func readLabelled(t *testing.T) []labelledExample {
	const path = "testdata/capture_labelled.tsv"
	var out []labelledExample
	readTSV(t, path, func(n int, fields []string) {
		if len(fields) != 3 || fields[1] != "capture" && fields[1] != "skip" {
			t.Fatalf("%s:%d: want language, capture|skip and text separated by tabs", path, n)
		}
		out = append(out, labelledExample{lang: fields[0], capture: fields[1] == "capture", text: fields[2], line: n})
	})
	return out
}

// readTSV calls line with the tab-separated fields and the number of each
// line of path that is neither empty nor a "#" comment.
func readTSV(t *testing.T, path string, line func(n int, fields []string)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			line(n, strings.Split(l, "\t"))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// confusion counts captures (the positive class) against the labels.
type confusion struct{ tp, fp, fn, tn int }

// sumLanguages adds up per-language tallies and lists the languages,
// sorted, for the labelled tables' per-language reports.
func sumLanguages(byLang map[string]*confusion) (all confusion, langs []string) {
	for l, c := range byLang {
		langs = append(langs, l)
		all.tp, all.fp, all.fn, all.tn = all.tp+c.tp, all.fp+c.fp, all.fn+c.fn, all.tn+c.tn
	}
	slices.Sort(langs)
	return all, langs
}

// add counts a verdict got against the label want.
func (c *confusion) add(got, want bool) {
	switch {
	case got && want:
		c.tp++
	case got:
		c.fp++
	case want:
		c.fn++
	default:
		c.tn++
	}
}

func (c confusion) precision() float64 { return ratio(c.tp, c.tp+c.fp) }
func (c confusion) recall() float64    { return ratio(c.tp, c.tp+c.fn) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// Thresholds for the labelled table; see issue 12.
const (
	minLabelledPrecision = 0.97
	minLabelledRecall    = 0.95
)

// TestCaptureLabelled measures ShouldCapture on a table of realistic user
// messages in six languages: half questions, requests and talk about the
// memory itself, which are not memories, half facts, preferences, decisions
// and explicit "remember" statements, which are.
func TestCaptureLabelled(t *testing.T) {
	examples := readLabelled(t)
	if len(examples) < 300 {
		t.Fatalf("labelled table has %d messages, want at least 300", len(examples))
	}
	byLang := map[string]*confusion{}
	for _, e := range examples {
		c := byLang[e.lang]
		if c == nil {
			c = &confusion{}
			byLang[e.lang] = c
		}
		got := ShouldCapture(e.text, CaptureOptions{})
		switch {
		case got && e.capture:
			c.tp++
		case got && !e.capture:
			c.fp++
			t.Logf("line %d: captured a %s question or request: %q", e.line, e.lang, e.text)
		case !got && e.capture:
			c.fn++
			t.Logf("line %d: missed a %s memory: %q", e.line, e.lang, e.text)
		default:
			c.tn++
		}
	}
	all, langs := sumLanguages(byLang)
	for _, l := range langs {
		c := byLang[l]
		t.Logf("%s: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)",
			l, c.precision(), c.recall(), c.tp, c.fp, c.fn, c.tn)
		if pos, neg := c.tp+c.fn, c.fp+c.tn; pos < 20 || neg < 20 {
			t.Errorf("%s: %d memories and %d questions in the table, want at least 20 of each", l, pos, neg)
		}
	}
	t.Logf("all: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)",
		all.precision(), all.recall(), all.tp, all.fp, all.fn, all.tn)
	if p := all.precision(); p < minLabelledPrecision {
		t.Errorf("capture precision %.3f, want at least %.2f", p, minLabelledPrecision)
	}
	if r := all.recall(); r < minLabelledRecall {
		t.Errorf("capture recall %.3f, want at least %.2f", r, minLabelledRecall)
	}
}
