package rules

import (
	"flag"
	"maps"
	"math"
	"slices"
	"testing"
)

var updateReplaceModel = flag.Bool("update-replace-model", false,
	"train on testdata/facts/pairs_train*.tsv and rewrite replace_model.bin")

const (
	factTables       = "../../testdata/facts"
	replaceModelPath = "replace_model.bin"
	// replaceTargetPrecision is what rules and model together must reach
	// on the validation pairs: a wrong "replaces" ranks an older fact
	// below a newer one that never changed it.
	replaceTargetPrecision = 0.95
	// minReplaceValidationRecall is a floor under the validation recall
	// the model last reached: 0.367 at precision 0.951 (the rules alone
	// 0.161) on the validation fifth of seven writers' tables, so that a
	// corpus or feature change that costs it is noticed. (With five tables
	// the model reached 0.401 on their fifth; the two later tables, changes
	// told without a change word, make the split harder: that model scores
	// 0.386 on the seven tables' fifth, but reads 49 of 9,180 made pairs as
	// a change, past maxMadeReplaces, where the retrained one reads 23.)
	minReplaceValidationRecall = 0.34
)

// maxMadeReplaces is the share of made pairs (two facts of different
// slots, a fact beside a remark) rules and model may read as a change:
// recall compares every pair of what it found, and most are such pairs.
const maxMadeReplaces = 0.005

var replaceParams = fitParams{bits: replaceBits, epochs: 40, rate: 0.05, l2: 5e-4, seed: 26}

// replacePair is a line of a pair table, or a pair made of two lines'
// texts about different slots (unrelated by construction).
type replacePair struct {
	lang, slot   string
	older, newer string
	label        string // supersede, coexist or unrelated (a made pair is unrelated)
	made         bool
	validation   bool
	// The features and sparse vectors of each head.
	rawChange, rawSame []uint32
	xChange, xSame     sparse
	rules              bool
}

func (p replacePair) supersede() bool { return p.label == "supersede" }

// readPairTable reads a pair table: label, lang, slot, older, newer.
func readPairTable(t *testing.T, path string) []replacePair {
	t.Helper()
	var out []replacePair
	readTSV(t, path, func(n int, c []string) {
		if len(c) != 5 || c[0] != "supersede" && c[0] != "coexist" && c[0] != "unrelated" || c[3] == "" || c[4] == "" {
			t.Fatalf("%s:%d: want supersede|coexist|unrelated, language, slot, older and newer separated by tabs", path, n)
		}
		out = append(out, replacePair{lang: c[1], slot: c[2], older: c[3], newer: c[4], label: c[0]})
	})
	return out
}

// replaceTrainingSet reads every pair table and adds, for each line, made
// pairs: its newer text against the older text of lines some way further
// on in the same table and language whose slot differs, and each of its
// texts beside a message of the capture tables that is no memory (a
// question, a request, chit-chat). Recall compares every memory it found
// with every other, and most of those pairs are two facts about different
// things, or a fact and a remark stored whole.
func replaceTrainingSet(t *testing.T) []replacePair {
	paths := pairTablePaths(t)
	chat := map[string][]string{}
	for _, path := range captureTrainPaths(t) {
		for _, e := range readCaptureTable(t, path) {
			if !e.keep {
				chat[e.lang] = append(chat[e.lang], e.text)
			}
		}
	}
	var out []replacePair
	for _, path := range paths {
		lines := readPairTable(t, path)
		byLang := map[string][]int{}
		for i, p := range lines {
			byLang[p.lang] = append(byLang[p.lang], i)
		}
		out = append(out, lines...)
		for _, lang := range slices.Sorted(maps.Keys(byLang)) {
			idx := byLang[lang]
			for k, i := range idx {
				for _, step := range []int{7, 31} {
					j := idx[(k+step)%len(idx)]
					if lines[j].slot == lines[i].slot {
						continue
					}
					out = append(out, replacePair{lang: lines[i].lang, slot: lines[j].slot, older: lines[j].older,
						newer: lines[i].newer, label: "unrelated", made: true})
				}
				if c := chat[lines[i].lang]; len(c) > 0 {
					l := lines[i]
					out = append(out,
						replacePair{lang: l.lang, slot: l.slot, older: l.older, newer: c[(k*13)%len(c)], label: "unrelated", made: true},
						replacePair{lang: l.lang, slot: "-", older: c[(k*17+5)%len(c)], newer: l.newer, label: "unrelated", made: true})
				}
			}
		}
	}
	// Most texts stand in several pairs: each is read once.
	read := map[string]*Statement{}
	statement := func(text string) *Statement {
		if s, ok := read[text]; ok {
			return s
		}
		s := ReadStatement(text)
		read[text] = s
		return s
	}
	for i := range out {
		p := &out[i]
		p.validation = heldOutOf(p.older+"\t"+p.newer, validationShare)
		n, o := statement(p.newer), statement(p.older)
		p.rawChange, p.rawSame = changeFeatures(nil, n), sameFactFeatures(nil, n, o)
		p.xChange, p.xSame = toSparse(p.rawChange, 1<<replaceBits-1), toSparse(p.rawSame, 1<<replaceBits-1)
		p.rules = n.told(o)
	}
	return out
}

// trainReplace fits both heads outside the validation split — the change
// head on the written pairs' newer texts, supersede against coexist; the
// same-fact head on every pair, supersede and coexist against unrelated
// and made — and picks their thresholds together: of the pairs at which
// rules and model reach replaceTargetPrecision on the written validation
// pairs (the made ones, easy to tell apart, would flatter it), the one
// with the highest recall.
func trainReplace(pairs []replacePair) *linearModel {
	xc := make([]sparse, len(pairs))
	xs := make([]sparse, len(pairs))
	yc := make([]bool, len(pairs))
	ys := make([]bool, len(pairs))
	var trainChange, trainSame []int
	for i, p := range pairs {
		xc[i], xs[i] = p.xChange, p.xSame
		yc[i], ys[i] = p.supersede(), p.label != "unrelated"
		if p.validation {
			continue
		}
		trainSame = append(trainSame, i)
		if !p.made && p.label != "unrelated" {
			trainChange = append(trainChange, i)
		}
	}
	m := &linearModel{bits: replaceBits, heads: []linearHead{
		headChange:   fitHead(xc, yc, trainChange, replaceParams),
		headSameFact: fitHead(xs, ys, trainSame, replaceParams),
	}}
	m.heads[headChange].threshold, m.heads[headSameFact].threshold = pickReplaceThresholds(m, pairs)
	return m
}

// pickReplaceThresholds tries each head's validation scores as its
// threshold, halfway to the next lower one.
func pickReplaceThresholds(m *linearModel, pairs []replacePair) (change, same float32) {
	type scored struct {
		c, s      float32
		rules, ok bool
	}
	var val, made []scored
	var cs, ss []float32
	for _, p := range pairs {
		if !p.validation {
			continue
		}
		v := scored{m.score(headChange, slices.Clone(p.rawChange)), m.score(headSameFact, slices.Clone(p.rawSame)), p.rules, p.supersede()}
		if p.made {
			made = append(made, v)
			continue
		}
		val = append(val, v)
		if !v.rules && v.ok {
			cs, ss = append(cs, v.c), append(ss, v.s)
		}
	}
	cuts := func(xs []float32) []float32 {
		slices.Sort(xs)
		xs = slices.Compact(xs)
		var out []float32
		for i := range xs {
			if i == 0 {
				out = append(out, xs[0]-1)
			} else {
				out = append(out, (xs[i-1]+xs[i])/2)
			}
		}
		return out
	}
	// The rules' verdicts pass whatever the thresholds; of the rest, for
	// each change threshold, the same-fact scores of what passes it, in
	// order, so that each same-fact threshold is a binary search.
	var baseTP, baseFP, baseMade int
	for _, v := range val {
		if v.rules && v.ok {
			baseTP++
		} else if v.rules {
			baseFP++
		}
	}
	for _, v := range made {
		if v.rules {
			baseMade++
		}
	}
	atLeast := func(sorted []float32, t float32) int {
		i, _ := slices.BinarySearch(sorted, t)
		return len(sorted) - i
	}
	change, same = math.MaxFloat32, math.MaxFloat32
	best := -1
	sameCuts := cuts(ss)
	for _, tc := range cuts(cs) {
		var pos, neg, mad []float32
		for _, v := range val {
			if !v.rules && v.c >= tc {
				if v.ok {
					pos = append(pos, v.s)
				} else {
					neg = append(neg, v.s)
				}
			}
		}
		for _, v := range made {
			if !v.rules && v.c >= tc {
				mad = append(mad, v.s)
			}
		}
		slices.Sort(pos)
		slices.Sort(neg)
		slices.Sort(mad)
		for _, ts := range sameCuts {
			tp, fp := baseTP+atLeast(pos, ts), baseFP+atLeast(neg, ts)
			madeFP := baseMade + atLeast(mad, ts)
			if float64(tp) >= replaceTargetPrecision*float64(tp+fp) && float64(madeFP) <= maxMadeReplaces*float64(len(made)) && tp > best {
				best, change, same = tp, tc, ts
			}
		}
	}
	return change, same
}

// replaces is Statement.Replaces on a training pair's features.
func (p replacePair) replaces(m *linearModel) bool {
	return p.rules || m.score(headChange, slices.Clone(p.rawChange)) >= m.heads[headChange].threshold &&
		m.score(headSameFact, slices.Clone(p.rawSame)) >= m.heads[headSameFact].threshold
}

// TestReplaceModelReproducible trains the replace model again from the
// pair tables and requires the committed replace_model.bin to be exactly
// what it yields; with -update-replace-model it writes the file instead.
// It reports the validation split's figures, for the rules alone and for
// rules and model (Statement.Replaces), per language and for the written
// and the made pairs.
func TestReplaceModelReproducible(t *testing.T) {
	pairs := replaceTrainingSet(t)
	m := trainReplace(pairs)
	writeOrCompareModel(t, m, replaceMagic, replaceModelPath, replaceModelFile, *updateReplaceModel)
	var rules, both, made confusion
	byLang := map[string]*confusion{}
	for _, p := range pairs {
		if !p.validation {
			continue
		}
		got := p.replaces(m)
		if p.made {
			made.add(got, false)
			continue
		}
		c := byLang[p.lang]
		if c == nil {
			c = &confusion{}
			byLang[p.lang] = c
		}
		c.add(got, p.supersede())
		rules.add(p.rules, p.supersede())
		both.add(got, p.supersede())
	}
	for _, l := range slices.Sorted(maps.Keys(byLang)) {
		c := byLang[l]
		t.Logf("validation %s: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)", l, c.precision(), c.recall(), c.tp, c.fp, c.fn, c.tn)
	}
	t.Logf("validation, rules alone: precision %.3f recall %.3f", rules.precision(), rules.recall())
	t.Logf("validation, rules and model: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d), thresholds %.3f (change) and %.3f (same fact)",
		both.precision(), both.recall(), both.tp, both.fp, both.fn, both.tn, m.heads[headChange].threshold, m.heads[headSameFact].threshold)
	t.Logf("validation, made pairs (different slots): %d of %d read as a change", made.fp, made.fp+made.tn)
	if both.precision() < replaceTargetPrecision-0.03 || both.recall() < minReplaceValidationRecall {
		t.Errorf("validation precision %.3f recall %.3f, want at least %.2f and %.2f",
			both.precision(), both.recall(), replaceTargetPrecision-0.03, minReplaceValidationRecall)
	}
}
