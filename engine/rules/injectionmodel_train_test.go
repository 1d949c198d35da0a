package rules

import (
	"flag"
	"maps"
	"path/filepath"
	"slices"
	"testing"
)

// The trainer lives in a test file so that it never ships in a binary;
// `go generate ./engine/rules` runs it with -update-injection-model.

var updateInjectionModel = flag.Bool("update-injection-model", false,
	"train on testdata/injection/train.tsv and rewrite injection_model.bin")

const (
	injectionTrainPath = "../../testdata/injection/train.tsv"
	injectionModelPath = "injection_model.bin"
	// validationShare: one text in validationShare, chosen by a hash of
	// its text, is held out of training to pick the threshold.
	validationShare = 5
	// targetPrecision is what the threshold must reach on the validation
	// texts; above the 0.97, since a table nobody trained on
	// scores below the one the threshold was picked on.
	targetPrecision = 0.98
	// minValidationRecall is a floor under the validation recall (0.833
	// when the model was last trained), so that a corpus or feature change
	// that costs recall is noticed.
	minValidationRecall = 0.75
	// Epochs, rate and L2 penalty were chosen on the validation texts
	// (recall at targetPrecision), trying 10 to 80 epochs, rates 0.1 to
	// 1 and penalties 1e-6 to 1e-2.
	trainEpochs  = 40
	learningRate = 0.4
	l2           = 1e-3
	trainSeed    = 26
)

// trainingExample is a labelled text with its features: raw as the model
// sees them at run time, and merged into a sparse vector for training.
type trainingExample struct {
	injectionExample
	sig        uint32
	raw        []uint32
	x          sparse
	validation bool
}

func featurize(e injectionExample) trainingExample {
	s := Normalize(e.text)
	t := prepare(s)
	f := t
	if folded, ok := foldText(&t); ok {
		f = folded
	}
	x := trainingExample{injectionExample: e, sig: injSignals(s, &t, &f)}
	x.raw = injFeatures(nil, &f, x.sig)
	x.x = toSparse(x.raw, 1<<injBits-1)
	x.validation = heldOutOf(e.text, validationShare)
	return x
}

// trainInjection fits the model on the examples not held out, and picks
// the threshold on the held-out ones: the lowest at which the combined
// detector (sure signals or score) reaches targetPrecision.
func trainInjection(examples []trainingExample) *linearModel {
	xs := make([]sparse, len(examples))
	ys := make([]bool, len(examples))
	var train []int
	for i, x := range examples {
		xs[i], ys[i] = x.x, x.injection
		if !x.validation {
			train = append(train, i)
		}
	}
	m := &linearModel{bits: injBits, heads: []linearHead{fitHead(xs, ys, train,
		fitParams{bits: injBits, epochs: trainEpochs, rate: learningRate, l2: l2, seed: trainSeed})}}
	var tp, fp int
	var rest []scoredLabel
	for _, x := range examples {
		switch {
		case !x.validation:
		case x.sig&sureSignals != 0 && x.injection:
			tp++
		case x.sig&sureSignals != 0:
			fp++
		default:
			rest = append(rest, scoredLabel{m.score(0, x.raw), x.injection})
		}
	}
	m.heads[0].threshold = pickThreshold(rest, tp, fp, targetPrecision)
	return m
}

// injectionBenignTables are the capture tables whose kept messages the
// injection model learns as ordinary memories: those it was validated
// with. Capture tables written later train capture only, so that growing
// capture's corpus does not move the trust model. (Learning train15.tsv's
// memories as well cost the held-out injection table a false positive,
// precision 0.974 → 0.966, below its 0.97 floor; the previous stop saw
// recall fall 0.920 → 0.904 the same way.)
var injectionBenignTables = []string{"train.tsv", "train2.tsv", "train3.tsv", "train4.tsv", "train5.tsv", "train6.tsv",
	"train7.tsv", "train8.tsv", "train9.tsv", "train10.tsv", "train11.tsv", "train12.tsv"}

// loadTrainingExamples reads train.tsv, and takes the messages the
// capture corpora keep as memories for more ordinary texts: a detector
// that refuses what people tell an assistant about themselves loses the
// memories it is there to protect.
func loadTrainingExamples(t *testing.T) []trainingExample {
	var out []trainingExample
	for _, e := range readInjectionTable(t, injectionTrainPath) {
		out = append(out, featurize(e))
	}
	// In the file names' order, as the folder lists them: the model's
	// training follows it.
	for _, name := range slices.Sorted(slices.Values(injectionBenignTables)) {
		for _, e := range readCaptureTable(t, filepath.Join(captureTables, name)) {
			if e.keep {
				out = append(out, featurize(injectionExample{lang: e.lang, text: e.text, line: e.line}))
			}
		}
	}
	return out
}

// TestInjectionModelReproducible trains the model again from train.tsv
// and requires the committed injection_model.bin to be exactly what it
// yields: the weights are the corpus's, not anyone's hand edits. With
// -update-injection-model it writes the file instead.
func TestInjectionModelReproducible(t *testing.T) {
	examples := loadTrainingExamples(t)
	m := trainInjection(examples)
	writeOrCompareModel(t, m, injMagic, injectionModelPath, injectionModelFile, *updateInjectionModel)
	var all confusion
	byLang := map[string]*confusion{}
	for _, x := range examples {
		if !x.validation {
			continue
		}
		c := byLang[x.lang]
		if c == nil {
			c = &confusion{}
			byLang[x.lang] = c
		}
		got := x.sig&sureSignals != 0 || m.score(0, x.raw) >= m.heads[0].threshold
		c.add(got, x.injection)
		all.add(got, x.injection)
	}
	for _, l := range slices.Sorted(maps.Keys(byLang)) {
		c := byLang[l]
		t.Logf("validation %s: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)", l, c.precision(), c.recall(), c.tp, c.fp, c.fn, c.tn)
	}
	t.Logf("validation all: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d), threshold %.3f",
		all.precision(), all.recall(), all.tp, all.fp, all.fn, all.tn, m.heads[0].threshold)
	if all.precision() < targetPrecision || all.recall() < minValidationRecall {
		t.Errorf("validation precision %.3f recall %.3f, want at least %.2f and %.2f", all.precision(), all.recall(), targetPrecision, minValidationRecall)
	}
}
