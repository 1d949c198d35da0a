package redact

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// labelledLine is one line of testdata/secrets/labelled.tsv.
type labelledLine struct {
	n      int
	secret bool
	kind   string
	text   string
}

// readLabelled reads a table of label<TAB>kind<TAB>text lines; "\n" in a
// text stands for a line break (PEM blocks, .env files).
func readLabelled(t *testing.T, path string) []labelledLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []labelledLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 || (parts[0] != "0" && parts[0] != "1") {
			t.Fatalf("%s:%d: want label<TAB>kind<TAB>text with label 0 or 1", path, n)
		}
		out = append(out, labelledLine{n: n, secret: parts[0] == "1", kind: parts[1], text: strings.ReplaceAll(parts[2], `\n`, "\n")})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// scoreTable measures Find on a labelled table: a line with a secret
// counts as found when Find reports anything on it.
// A held-out table's misses are not logged: a table read for its misses
// stops being held out.
func scoreTable(t *testing.T, path string) (precision, recall float64) {
	quiet := strings.HasPrefix(filepath.Base(path), "heldout")
	lines := readLabelled(t, path)
	var tp, fp, fn, tn int
	for _, l := range lines {
		fs := Find(l.text)
		switch {
		case l.secret && len(fs) > 0:
			tp++
		case l.secret:
			fn++
			if !quiet {
				t.Logf("missed (line %d, %s): %q", l.n, l.kind, l.text)
			}
		case len(fs) > 0:
			fp++
			if quiet {
				t.Logf("false alarm (line %d, %s)", l.n, l.kind)
				continue
			}
			t.Logf("false alarm (line %d, %s): %q found %s %q", l.n, l.kind, l.text, fs[0].Kind, l.text[fs[0].Start:fs[0].End])
		default:
			tn++
		}
	}
	precision = float64(tp) / float64(max(tp+fp, 1))
	recall = float64(tp) / float64(max(tp+fn, 1))
	t.Logf("%s: %d lines (%d with a secret): precision %.3f (%d/%d), recall %.3f (%d/%d)",
		filepath.Base(path), len(lines), tp+fn, precision, tp, tp+fp, recall, tp, tp+fn)
	return precision, recall
}

// TestLabelled measures the detector on each labelled table (run with -v
// for the figures); each table is scored alone, so a gain on one cannot
// hide a loss on another. labelled.tsv and dev2.tsv are the tables the
// rules were written against: they are held to 0.97 precision and recall.
// dev3.tsv and dev4.tsv were each written after the rules of their time
// and first measured untouched (dev3: 0.937/0.797, dev4: 0.952/0.779);
// rules for the kinds they showed missing came after, so they are no
// longer unseen. They are held to lower bars (precision 0.95, recall 0.93)
// because a fresh batch of phrasing is where the detector is expected to
// miss, and they stand for that unseen text: the bars catch a regression
// without asking every line of them to be found. dev5.tsv was written
// after every rule and never tuned on (0.977/0.894 as first measured), and
// its bars (0.95, 0.85) sit below those figures so that it guards against
// regressions without being fitted to. dev6, dev7 and dev8 came from three
// more writers, each told a different emphasis (dev6: every kind and
// phrasing; dev7: secrets pasted inside logs, configs and terminal
// output; dev8: the six languages' own everyday wording), and were read
// for their misses: first measured 0.988/0.898, 0.976/0.931 and
// 0.986/0.844, they taught the finders for cards, backup codes and
// recovery keys, authenticator secrets, spaced and dashed PINs beside a
// device, values in a CJK keyword's clause, passphrase-shaped passwords
// and more, and are held to 0.97 now. dev9 (structured documents:
// configs, e-mails, tickets; first 0.907/0.930), dev10 (short personal
// messages in the six languages; first 0.966/0.609), dev11 (source code
// and automation; first 0.897/0.902) and dev12 (families' and small
// businesses' logins and codes in eight languages; first 0.980/0.822)
// followed the same way.
func TestLabelled(t *testing.T) {
	for _, tc := range []struct {
		file                    string
		minPrecision, minRecall float64
	}{
		{"labelled.tsv", 0.97, 0.97},
		{"dev2.tsv", 0.97, 0.97},
		{"dev3.tsv", 0.95, 0.93},
		{"dev4.tsv", 0.95, 0.93},
		{"dev5.tsv", 0.95, 0.85},
		{"dev6.tsv", 0.97, 0.97},
		{"dev7.tsv", 0.97, 0.97},
		{"dev8.tsv", 0.97, 0.97},
		{"dev9.tsv", 0.97, 0.97},
		// dev10's writer counts a gym locker's code as a secret, which
		// this package does not (a locker is no lock: TestRedact): five
		// of its misses are those.
		{"dev10.tsv", 0.97, 0.90},
		{"dev11.tsv", 0.97, 0.97},
		{"dev12.tsv", 0.97, 0.95},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p, r := scoreTable(t, filepath.Join("..", "..", "testdata", "secrets", tc.file))
			if p < tc.minPrecision || r < tc.minRecall {
				t.Errorf("precision %.3f, recall %.3f: want at least %.2f and %.2f", p, r, tc.minPrecision, tc.minRecall)
			}
		})
	}
}

// TestHeldOut measures the detector on the held-out tables, written by
// people who never saw the detector or its other tables. heldout.tsv was
// the first; its misses were read once the detector was built, so its
// figures lean optimistic. heldout2.tsv and heldout3.tsv came later, from
// other writers, and nobody has read what the detector gets wrong on
// them: their figures are the ones to trust. heldout3 was measured before
// the finders dev6–dev8 taught (0.993/0.897), after them (0.981/0.958),
// after dev9–dev10 (0.988/0.964) and after dev11–dev12 (0.988/0.970).
func TestHeldOut(t *testing.T) {
	for _, tc := range []struct {
		file      string
		minRecall float64
	}{
		{"heldout.tsv", 0.97},
		{"heldout2.tsv", 0.97},
		// 160 of 165 found (0.9697), a hair under the 0.97 target: this
		// floor only keeps it from getting worse; the gap is reported on
		// issue 26.
		{"heldout3.tsv", 0.96},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p, r := scoreTable(t, filepath.Join("..", "..", "testdata", "secrets", tc.file))
			if p < 0.97 || r < tc.minRecall {
				t.Errorf("held-out precision %.3f, recall %.3f: want at least 0.97 and %.2f", p, r, tc.minRecall)
			}
		})
	}
}
