package rules

import (
	"flag"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/schemas"
)

var updateCaptureModel = flag.Bool("update-capture-model", false,
	"train on testdata/capture/train.tsv and rewrite capture_model.bin")

const (
	captureTables    = "../../testdata/capture"
	captureModelPath = "capture_model.bin"
	// captureTargetPrecision is what rules and model together must reach
	// on the validation texts: the 0.97 (at 0.98 recall fell from
	// 0.84 to 0.76).
	captureTargetPrecision = 0.97
	// Floors under the validation figures, a margin below what the model
	// last trained reached (recall 0.898, category accuracy 0.898 on the
	// validation fifth of eighteen writers' tables; 0.841 and 0.850 on the
	// fifth of the first two, an easier split), so that a corpus or
	// feature change that costs either is noticed.
	minCaptureValidationRecall   = 0.86
	minCaptureValidationCategory = 0.88
)

// maxVetoLoss is the share of the rules' right keeps on the validation
// split the model's veto may cost.
const maxVetoLoss = 0.02

// maxFloor: the model overrules the rules only when it is at least 80%
// sure a message is no memory (log-odds ln(0.2/0.8)). A floor picked on
// the validation split alone sat where plain preferences score ("I prefer
// window seats on long flights", -0.41 against -0.26).
var maxFloor = float32(math.Log(0.2 / 0.8))

// captureParams (the keep head's) and categoryParams were chosen on the
// validation texts, as the injection model's were: with twelve writers'
// tables the keep head gained recall at a higher rate and stronger L2
// (0.851 to 0.868 at precision 0.97, over seeds 30 and 31), the category
// heads nothing (0.878 and 0.877), so they kept theirs.
var (
	captureParams  = fitParams{bits: captureBits, epochs: 40, rate: 0.8, l2: 1e-3, seed: 30}
	categoryParams = fitParams{bits: captureBits, epochs: 40, rate: 0.4, l2: 5e-4, seed: 30}
)

// captureExample is a line of a capture table: label, category (for a
// kept message), language and message.
type captureExample struct {
	lang, text string
	keep       bool
	category   schemas.Category
	line       int
}

func readCaptureTable(t *testing.T, path string) []captureExample {
	t.Helper()
	var out []captureExample
	readTSV(t, path, func(n int, fields []string) {
		if len(fields) != 4 || fields[0] != "capture" && fields[0] != "skip" || fields[2] == "" {
			t.Fatalf("%s:%d: want capture|skip, category, language and message separated by tabs", path, n)
		}
		e := captureExample{keep: fields[0] == "capture", lang: fields[2], text: fields[3], line: n}
		if e.keep {
			e.category = schemas.Category(fields[1])
			if !slices.Contains(captureCategories, e.category) {
				t.Fatalf("%s:%d: category %q, want one of %v", path, n, fields[1], captureCategories)
			}
		} else if fields[1] != "-" {
			t.Fatalf("%s:%d: a skipped message has category %q, want -", path, n, fields[1])
		}
		out = append(out, e)
	})
	return out
}

// captureTraining is a training line with what the model sees of it:
// candidate is false for a message the checks before any rule refuse
// (too short, code, an injection...), which neither rules nor model keep.
type captureTraining struct {
	captureExample
	candidate  bool
	rules      bool // the rules keep it
	note       bool // and it says "remember that": kept whatever the model says
	raw        []uint32
	x          sparse
	validation bool
}

// captureTrainPaths are the training tables: train*.tsv, by more than
// one writer; every other table in the folder is held out.
func captureTrainPaths(t *testing.T) []string {
	paths, err := filepath.Glob(filepath.Join(captureTables, "train*.tsv"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no train*.tsv in %s (%v)", captureTables, err)
	}
	return paths
}

func captureTrainingSet(t *testing.T) []captureTraining {
	var out []captureTraining
	var examples []captureExample
	for _, path := range captureTrainPaths(t) {
		examples = append(examples, readCaptureTable(t, path)...)
	}
	// The rules' own table, whose captures name what they are ("remember
	// that", "I prefer"), so that the model learns those phrasings keep
	// too; it has no categories.
	for _, e := range readLabelled(t) {
		examples = append(examples, captureExample{lang: e.lang, text: e.text, keep: e.capture, line: e.line})
	}
	for _, e := range examples {
		x := captureTraining{captureExample: e, validation: heldOutOf(e.text, validationShare)}
		if s, pt, ok := captureCandidate(e.text, CaptureOptions{}); ok {
			x.candidate, x.rules = true, rulesKeep(s, &pt)
			x.note = x.rules && pt.has(ruleNote)
			x.raw = captureFeatures(nil, &pt, captureSignals(s, &pt, x.rules))
			x.x = toSparse(x.raw, 1<<captureBits-1)
		}
		out = append(out, x)
	}
	return out
}

// trainCapture fits the keep head on every candidate and each category's
// head, one against the rest, on the kept ones, all outside the
// validation split. The keep threshold is the lowest at which the model
// reaches captureTargetPrecision on the validation split. The model has
// the last word: what the rules would keep is one of its features, and on
// the corpora the rules alone kept questions and requests often enough
// (precision 0.82) that their verdict needs the rest of the text.
func trainCapture(examples []captureTraining) *linearModel {
	xs := make([]sparse, len(examples))
	keep := make([]bool, len(examples))
	var all, kept []int
	for i, x := range examples {
		xs[i], keep[i] = x.x, x.keep
		if x.validation || !x.candidate {
			continue
		}
		all = append(all, i)
		if x.keep && x.category != "" {
			kept = append(kept, i)
		}
	}
	m := &linearModel{bits: captureBits, heads: []linearHead{fitHead(xs, keep, all, captureParams)}}
	for _, c := range captureCategories {
		ys := make([]bool, len(examples))
		for i, x := range examples {
			ys[i] = x.category == c
		}
		h := fitHead(xs, ys, kept, categoryParams)
		h.threshold = 0
		m.heads = append(m.heads, h)
	}
	h := &m.heads[headKeep]
	h.threshold, h.floor = pickKeepThresholds(m, examples)
	return m
}

// pickKeepThresholds chooses the keep head's threshold and floor on the
// validation split: a message is kept when it scores at least threshold,
// or when the rules keep it and it scores at least floor. Of the pairs
// at which that reaches captureTargetPrecision, with a floor no higher than
// maxFloor that costs at most maxVetoLoss of the rules' right keeps, the
// one with the highest recall wins (the higher floor on a tie). Each floor tried sits halfway
// between two scores of messages the rules keep.
func pickKeepThresholds(m *linearModel, examples []captureTraining) (threshold, floor float32) {
	type scored struct {
		score             float32
		rules, note, keep bool
	}
	var val []scored
	var ruleScores []float32
	for _, x := range examples {
		if !x.validation {
			continue
		}
		if !x.candidate {
			continue
		}
		v := scored{m.score(headKeep, x.raw), x.rules, x.note, x.keep}
		val = append(val, v)
		if v.rules {
			ruleScores = append(ruleScores, v.score)
		}
	}
	slices.Sort(ruleScores)
	floors := []float32{-math.MaxFloat32}
	for i := 1; i < len(ruleScores); i++ {
		floors = append(floors, (ruleScores[i-1]+ruleScores[i])/2)
	}
	floors = append(floors, math.MaxFloat32)
	ruleHits := 0
	for _, v := range val {
		if v.rules && v.keep {
			ruleHits++
		}
	}
	best := -1
	for _, f := range floors {
		if f > maxFloor {
			continue
		}
		// The floor vetoes what the rules keep wrongly ("I like how you
		// did that summary, now do the next one"), not what they keep
		// rightly: it may cost at most maxVetoLoss of their right keeps.
		lost := 0
		for _, v := range val {
			if v.rules && !v.note && v.keep && v.score < f {
				lost++
			}
		}
		if float64(lost) > maxVetoLoss*float64(ruleHits) {
			continue
		}
		var tp, fp int
		var rest []scoredLabel
		for _, v := range val {
			switch {
			case (v.note || v.rules && v.score >= f) && v.keep:
				tp++
			case v.note || v.rules && v.score >= f:
				fp++
			default:
				rest = append(rest, scoredLabel{v.score, v.keep})
			}
		}
		th := pickThreshold(rest, tp, fp, captureTargetPrecision)
		if th == math.MaxFloat32 {
			continue
		}
		for _, r := range rest {
			if r.score >= th && r.positive {
				tp++
			}
		}
		if tp >= best {
			best, threshold, floor = tp, th, min(f, th)
		}
	}
	if best < 0 {
		return math.MaxFloat32, math.MaxFloat32
	}
	return threshold, floor
}

// TestCaptureModelReproducible trains the capture model again from
// train*.tsv and requires the committed capture_model.bin to be exactly
// what it yields. With -update-capture-model it writes the file instead.
// It reports the validation split's figures: rules alone, rules and
// model, and the categories of the rules and of the model.
func TestCaptureModelReproducible(t *testing.T) {
	examples := captureTrainingSet(t)
	m := trainCapture(examples)
	writeOrCompareModel(t, m, captureMagic, captureModelPath, captureModelFile, *updateCaptureModel)
	var rules, both confusion
	byLang := map[string]*confusion{}
	var modelRight, categorised int
	for _, x := range examples {
		if !x.validation {
			continue
		}
		c := byLang[x.lang]
		if c == nil {
			c = &confusion{}
			byLang[x.lang] = c
		}
		sc := m.score(headKeep, x.raw)
		keep := x.candidate && (x.note || sc >= m.heads[headKeep].threshold || x.rules && sc >= m.heads[headKeep].floor)
		rules.add(x.candidate && x.rules, x.keep)
		both.add(keep, x.keep)
		c.add(keep, x.keep)
		if x.keep && x.candidate && x.category != "" {
			categorised++
			if DetectCategory(x.text) == x.category {
				modelRight++
			}
		}
	}
	for _, l := range slices.Sorted(maps.Keys(byLang)) {
		c := byLang[l]
		t.Logf("validation %s: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)", l, c.precision(), c.recall(), c.tp, c.fp, c.fn, c.tn)
	}
	t.Logf("validation, rules alone: precision %.3f recall %.3f", rules.precision(), rules.recall())
	t.Logf("validation, rules and model: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d), threshold %.3f, floor %.3f",
		both.precision(), both.recall(), both.tp, both.fp, both.fn, both.tn, m.heads[headKeep].threshold, m.heads[headKeep].floor)
	t.Logf("validation categories (DetectCategory, with the committed model): %.3f of %d kept messages", ratio(modelRight, categorised), categorised)
	if both.precision() < captureTargetPrecision || both.recall() < minCaptureValidationRecall {
		t.Errorf("validation precision %.3f recall %.3f, want at least %.2f and %.2f",
			both.precision(), both.recall(), captureTargetPrecision, minCaptureValidationRecall)
	}
	if a := ratio(modelRight, categorised); a < minCaptureValidationCategory {
		t.Errorf("validation category accuracy %.3f, want at least %.2f", a, minCaptureValidationCategory)
	}
}

// minHeldOutCapture* are the floors of the capture tables nobody trained
// or tuned on (heldout.tsv): precision 0.979, recall 0.919 and category
// accuracy 0.906 reached with eighteen writers' training tables and the
// category heads deciding all but the preferences the lists name (0.979,
// 0.921 and 0.894 with sixteen while the lists decided; 0.979, 0.911 and 0.889
// with fourteen; 0.973, 0.894 and 0.877 with twelve; 0.887 before the rate and L2 were chosen; 0.967,
// 0.788 and 0.768 with two, 0.977, 0.820 and 0.845 with six), against the
// issue's 0.97, 0.92 and 0.90. The floors only keep them from getting
// worse. The rules alone scored 0.925 /
// 0.293 and 0.374 on it.
const (
	minHeldOutCapturePrecision = 0.97
	minHeldOutCaptureRecall    = 0.91
	minHeldOutCategory         = 0.89
)

// TestCaptureHeldOut measures ShouldCapture and DetectCategory on every
// capture table but train.tsv. It logs figures only, never the texts it
// got wrong: a table read for its misses stops being held out.
func TestCaptureHeldOut(t *testing.T) {
	tables, err := filepath.Glob(filepath.Join(captureTables, "*.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range tables {
		if strings.HasPrefix(filepath.Base(path), "train") {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			byLang := map[string]*confusion{}
			var right, kept int
			for _, e := range readCaptureTable(t, path) {
				c := byLang[e.lang]
				if c == nil {
					c = &confusion{}
					byLang[e.lang] = c
				}
				c.add(ShouldCapture(e.text, CaptureOptions{}), e.keep)
				if e.keep {
					kept++
					if DetectCategory(e.text) == e.category {
						right++
					}
				}
			}
			all, langs := sumLanguages(byLang)
			for _, l := range langs {
				c := byLang[l]
				t.Logf("%s: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)", l, c.precision(), c.recall(), c.tp, c.fp, c.fn, c.tn)
			}
			t.Logf("all: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d); category accuracy %.3f of %d",
				all.precision(), all.recall(), all.tp, all.fp, all.fn, all.tn, ratio(right, kept), kept)
			if all.precision() < minHeldOutCapturePrecision || all.recall() < minHeldOutCaptureRecall {
				t.Errorf("precision %.3f recall %.3f, want at least %.2f and %.2f",
					all.precision(), all.recall(), minHeldOutCapturePrecision, minHeldOutCaptureRecall)
			}
			if a := ratio(right, kept); a < minHeldOutCategory {
				t.Errorf("category accuracy %.3f, want at least %.2f", a, minHeldOutCategory)
			}
		})
	}
}
