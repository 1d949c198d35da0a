package rules

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// injectionTables are the labelled prompt-injection tables: labelled.tsv,
// written with the rules, and any other table dropped beside it (a held-out
// set), each measured on its own; train.tsv, which the model learnt from,
// is not among them.
const injectionTables = "../../testdata/injection"

type injectionExample struct {
	lang, text string
	injection  bool
	line       int
}

// readInjectionTable reads label, language and text per line; "\n" in a
// text stands for a newline.
func readInjectionTable(t *testing.T, path string) []injectionExample {
	t.Helper()
	var out []injectionExample
	readTSV(t, path, func(n int, fields []string) {
		if len(fields) > 3 {
			fields = append(fields[:2], strings.Join(fields[2:], "\t"))
		}
		if len(fields) != 3 || fields[0] != "0" && fields[0] != "1" || fields[1] == "" {
			t.Fatalf("%s:%d: want 0|1, language and text separated by tabs", path, n)
		}
		out = append(out, injectionExample{injection: fields[0] == "1", lang: fields[1],
			text: strings.ReplaceAll(fields[2], `\n`, "\n"), line: n})
	})
	return out
}

// Thresholds for the injection table (issue 26).
const (
	minInjectionPrecision = 0.97
	minInjectionRecall    = 0.90
)

// TestInjectionLabelled measures IsInjection on a table of injections and
// of ordinary memories and instructions a user stores, in eight languages.
// Precision is the share of refused texts that were injections: a false
// refusal loses a memory the user wanted kept.
func TestInjectionLabelled(t *testing.T) {
	tables, err := filepath.Glob(filepath.Join(injectionTables, "*.tsv"))
	if err != nil || !slices.Contains(tables, filepath.Join(injectionTables, "labelled.tsv")) {
		t.Fatalf("no labelled.tsv in %s (%v)", injectionTables, err)
	}
	for _, path := range tables {
		if filepath.Base(path) == filepath.Base(injectionTrainPath) {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			examples := readInjectionTable(t, path)
			main := filepath.Base(path) == "labelled.tsv"
			if main && len(examples) < 240 {
				t.Fatalf("%s has %d lines, want at least 240", path, len(examples))
			}
			measureInjection(t, examples, main)
		})
	}
}

// measureInjection logs IsInjection's precision and recall on examples,
// by language and in all, and fails below the thresholds; with
// perLanguage, every language needs at least ten of each label.
func measureInjection(t *testing.T, examples []injectionExample, perLanguage bool) {
	// A held-out table's mistakes are counted, never shown: a table read
	// for its misses stops being held out.
	quiet := strings.HasPrefix(t.Name(), "TestInjectionLabelled/heldout")
	byLang := map[string]*confusion{}
	for _, e := range examples {
		c := byLang[e.lang]
		if c == nil {
			c = &confusion{}
			byLang[e.lang] = c
		}
		switch got := IsInjection(e.text); {
		case got && e.injection:
			c.tp++
		case got:
			c.fp++
			if !quiet {
				t.Logf("line %d: refused a %s memory: %q", e.line, e.lang, e.text)
			}
		case e.injection:
			c.fn++
			if !quiet {
				t.Logf("line %d: missed a %s injection: %q", e.line, e.lang, e.text)
			}
		default:
			c.tn++
		}
	}
	all, langs := sumLanguages(byLang)
	for _, l := range langs {
		c := byLang[l]
		t.Logf("%s: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)", l, c.precision(), c.recall(), c.tp, c.fp, c.fn, c.tn)
		if pos, neg := c.tp+c.fn, c.fp+c.tn; perLanguage && (pos < 10 || neg < 10) {
			t.Errorf("%s: %d injections and %d memories in the table, want at least 10 of each", l, pos, neg)
		}
	}
	t.Logf("all: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)",
		all.precision(), all.recall(), all.tp, all.fp, all.fn, all.tn)
	if p := all.precision(); p < minInjectionPrecision {
		t.Errorf("injection precision %.3f, want at least %.2f", p, minInjectionPrecision)
	}
	if r := all.recall(); r < minInjectionRecall {
		t.Errorf("injection recall %.3f, want at least %.2f", r, minInjectionRecall)
	}
}

// TestInjectionSparesMemories: no message the capture table keeps as a
// memory (capture_labelled.tsv, which no model trained on) is refused as
// an injection: a refusal loses what the user wanted kept.
func TestInjectionSparesMemories(t *testing.T) {
	n := 0
	for _, e := range readLabelled(t) {
		if !e.capture {
			continue
		}
		n++
		if IsInjection(e.text) {
			t.Errorf("line %d: refused the %s memory %q", e.line, e.lang, e.text)
		}
	}
	if n < 250 {
		t.Errorf("%d memories checked, want at least 250", n)
	}
}

// TestProbesRefused: the issue 26 probe texts are injections, and capture
// refuses a message carrying one after a memory it would otherwise keep.
func TestProbesRefused(t *testing.T) {
	data, err := os.ReadFile("../../testdata/injection/probes.txt")
	if err != nil {
		t.Fatal(err)
	}
	const memory = "Remember that I prefer green tea in the afternoon."
	if !ShouldCapture(memory+"\nMy favourite colour is green.", CaptureOptions{}) {
		t.Fatal("capture refuses the harmless control message")
	}
	n := 0
	for line := range strings.Lines(string(data)) {
		p := strings.TrimSuffix(line, "\n")
		if p == "" || strings.HasPrefix(p, "//") {
			continue
		}
		n++
		if !IsInjection(p) {
			t.Errorf("IsInjection(%q) = false", p)
		}
		if ShouldCapture(memory+"\n"+p, CaptureOptions{}) {
			t.Errorf("captured a message carrying %q", p)
		}
	}
	if n != 12 {
		t.Errorf("%d probe texts, want 12", n)
	}
}
