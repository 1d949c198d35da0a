package rules

import (
	_ "embed"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/clawmem/clawmem/schemas"
)

// The learned half of capture: a linear model (linear.go) over hashed
// features of the normalised message (words, word bigrams, character
// n-grams and what the rules found in it), trained on
// testdata/capture/train.tsv. The rules keep what their word lists name;
// the model keeps durable statements nobody listed a phrase for (habits,
// idiomatic dislikes, standing instructions, work and family facts,
// changed facts), by the company their words and letters keep. Its first
// head scores "worth keeping"; the other five score the categories, one
// against the rest.
//
// The weights are generated: `go generate ./engine/rules` runs the
// trainer (capturemodel_train_test.go), which rewrites capture_model.bin;
// TestCaptureModelReproducible trains again and fails if it differs.

//go:embed capture_model.bin
var captureModelFile []byte

var captureModel = mustDecodeLinear(captureModelFile, captureMagic, "capture_model.bin")

const (
	captureMagic = "CMCAP001"
	captureBits  = 17 // 256 KiB of weights per head: 11,000 training texts crowd 2^16
	headKeep     = 0
)

// captureCategories are the categories heads 1.. score, in head order.
var captureCategories = []schemas.Category{
	schemas.CategoryPreference, schemas.CategoryDecision, schemas.CategoryEntity,
	schemas.CategoryFact, schemas.CategoryOther,
}

// Capture signals: what the rules found in a message, as model features.
const (
	capTrigger uint32 = 1 << iota
	capPreference
	capDecision
	capEntity
	capFact
	capNote
	capAsk
	capYesNo
	capRecall
	capStates // the rules would keep it
	capPhone
	capEmail
	capSlot
	capQuestionMark
	capFirstPerson
	capSecondPerson
	capShort       // under five words
	capLong        // over twenty words
	capSignalCount = iota
)

// captureSignals runs the rules on t, the prepared message s; keep is
// their capture verdict (rulesKeep), which the caller has already.
func captureSignals(s string, t *text, keep bool) uint32 {
	var sig uint32
	set := func(b uint32, on bool) {
		if on {
			sig |= b
		}
	}
	hits := t.rules()
	set(capTrigger, hits&ruleTrigger != 0)
	set(capPreference, hits&rulePreference != 0)
	set(capDecision, hits&ruleDecision != 0)
	set(capEntity, hits&ruleEntity != 0)
	set(capFact, hits&ruleFact != 0)
	set(capNote, hits&ruleNote != 0)
	set(capAsk, hits&ruleAsk != 0 || opensWithInterrogative(t))
	set(capYesNo, hits&ruleYesNo != 0)
	set(capRecall, hits&ruleRecall != 0)
	set(capPhone, hasPhoneNumber(s))
	set(capEmail, hasEmail(s))
	set(capSlot, t.cjk && hasMySlot(t.lower))
	set(capStates, keep)
	set(capQuestionMark, strings.ContainsAny(t.lower, "?？"))
	for i := range t.words {
		w := t.word(i)
		set(capFirstPerson, oneOf(w, firstPerson))
		set(capSecondPerson, oneOf(w, secondPerson))
	}
	if t.cjk {
		for _, p := range firstPersonCJK {
			if strings.Contains(t.lower, p) {
				sig |= capFirstPerson
				break
			}
		}
	}
	set(capShort, len(t.words) < 5)
	set(capLong, len(t.words) > 20)
	return sig
}

// firstPerson are the words a speaker names themselves or their own
// people by, in the capture languages; firstPersonCJK are substrings.
var (
	firstPerson = []string{
		"i", "i'm", "im", "i've", "ive", "i'd", "i'll", "me", "my", "mine", "myself", "we", "we're", "we've", "our", "ours", "us",
		"ich", "mich", "mir", "mein", "meine", "meinen", "meinem", "meiner", "wir", "uns", "unser", "unsere", "unseren",
		"já", "jsem", "mám", "mě", "mně", "mi", "můj", "moje", "moji", "mého", "my", "jsme", "náš", "naše", "našeho",
	}
	firstPersonCJK = []string{"我", "私", "僕", "俺", "うち", "나는", "내가", "내 ", "저는", "제가", "제 ", "우리"}
)

// captureFeatures appends the features of t (the prepared message s) with
// its signals sig.
func captureFeatures(feats []uint32, t *text, sig uint32) []uint32 {
	feats = signalFeatures(feats, kindCaptureSignal, sig, capSignalCount)
	feats = wordGrams(feats, t)
	feats = edgeFeatures(feats, t)
	return charGrams(feats, t.lower)
}

// edgeFeatures: what a message opens and ends with says whether it tells
// or asks ("can you…", "…?", "…吗", "…ですか", "…해 줘") more than its
// middle does: the first word and the first two, the last word, and the
// last three characters before the final punctuation, and that
// punctuation.
func edgeFeatures(feats []uint32, t *text) []uint32 {
	n := len(t.words)
	if n == 0 {
		return feats
	}
	first := fnvString(fnvOffset^kindEdge, t.word(0))
	feats = append(feats, bucket(first))
	if n > 1 {
		feats = append(feats, bucket(fnvString(first*fnvPrime, t.word(1))))
	}
	feats = append(feats, bucket(fnvString((fnvOffset^kindEdge)*fnvPrime, t.word(n-1))))
	body := strings.TrimRightFunc(t.lower, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r) })
	end := t.lower[len(body):]
	end = strings.TrimSpace(end)
	if r, _ := utf8.DecodeRuneInString(end); end != "" {
		feats = append(feats, bucket((fnvOffset^kindEdge)*fnvPrime*fnvPrime^uint32(r)))
	} else {
		feats = append(feats, bucket((fnvOffset^kindEdge)*fnvPrime*fnvPrime^1))
	}
	tail := body
	for k := 0; k < 3 && tail != ""; k++ {
		_, size := utf8.DecodeLastRuneInString(tail)
		tail = tail[:len(tail)-size]
	}
	return append(feats, bucket(fnvString((fnvOffset^kindEdge)^0x5bd1e995, body[len(tail):])))
}

// modelKeeps reports whether the model keeps the message: when it scores
// at least the keep threshold, or at least the lower floor when the rules
// would keep it (rules): the model then only vetoes what it is sure is
// no memory ("I like how you did that summary, now do the next one").
func modelKeeps(s string, t *text, rules bool) bool {
	h := &captureModel.heads[headKeep]
	sc := keepScore(s, t, rules)
	return sc >= h.threshold || rules && sc >= h.floor
}

// keepScore is the keep head's score of t, the prepared message s, whose
// rules verdict is rules.
func keepScore(s string, t *text, rules bool) float32 {
	var stack [featsOnStack]uint32
	return captureModel.score(headKeep, captureFeatures(stack[:0], t, captureSignals(s, t, rules)))
}

// categoryOf is the category whose head, in a capture model, scores feats
// highest (each head is one category against the rest).
func (m *linearModel) categoryOf(feats []uint32) schemas.Category {
	best, top := -1, float32(0)
	for i := range captureCategories {
		if sc := m.score(1+i, feats); best < 0 || sc > top {
			best, top = i, sc
		}
	}
	return captureCategories[best]
}
