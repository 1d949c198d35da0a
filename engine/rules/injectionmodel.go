package rules

import (
	_ "embed"
	"unicode"
	"unicode/utf8"
)

// The learned half of IsInjection: a logistic regression over hashed
// features of the normalised, folded text (word unigrams and bigrams,
// character 3- to 5-grams, the rules' own signals and the classes of the
// override vocabulary), trained on testdata/injection/train.tsv. The rules
// list phrasings; the model scores the phrasings nobody listed by the
// company their words and letters keep. Character n-grams carry Chinese,
// Japanese and Korean, where there are no spaces to split words at, and
// obfuscations that break words apart.
//
// The weights are generated, not written: `go generate ./engine/rules`
// runs the trainer (injectionmodel_train_test.go), which rewrites
// injection_model.bin; TestInjectionModelReproducible trains again and
// fails if the committed file differs.

//go:embed injection_model.bin
var injectionModelFile []byte

// injectionModel is decoded once; a damaged file is a build defect, so it
// panics rather than leave IsInjection without its model.
var injectionModel = mustDecodeLinear(injectionModelFile, injMagic, "injection_model.bin")

const (
	injMagic = "CMINJ002"
	injBits  = 18 // 512 KiB of weights
)

// Rule signals: what each rule found, as model features and, for the
// signals precise enough on their own, as verdicts (sureSignals).
const (
	sigRoleTag uint32 = 1 << iota
	sigRoleHeader
	sigFraming
	sigTool
	sigLexicon
	sigOverride
	sigOverrideCJK
	sigSecondPerson
	sigCount = iota
)

// sureSignals refuse a text whatever the model says: on train.tsv each of
// them alone has a precision of at least 0.97 (TestInjectionSignalsPrecise).
// The lexicon's phrases are left to the model, which weighs them with the
// rest of the text.
const sureSignals = sigRoleTag | sigRoleHeader | sigFraming | sigTool | sigOverride | sigOverrideCJK

// injSignals runs every rule on s, prepared into t and folded into f.
func injSignals(s string, t, f *text) uint32 {
	var sig uint32
	set := func(b uint32, on bool) {
		if on {
			sig |= b
		}
	}
	set(sigRoleTag, hasRoleTag(t.lower))
	set(sigRoleHeader, hasRoleHeader(s))
	set(sigFraming, forgesFraming(t.lower))
	set(sigTool, runsTool(t))
	set(sigLexicon, f.has(ruleInjection))
	set(sigOverride, overrides(f))
	set(sigOverrideCJK, overridesCJK(f))
	for i := range f.words {
		if oneOf(f.word(i), secondPerson) {
			sig |= sigSecondPerson
			break
		}
	}
	return sig
}

// Feature kinds, mixed into each hash so that a word and a character
// n-gram spelling the same bytes land in different buckets.
const (
	kindWord uint32 = iota + 1
	kindBigram
	kindChar
	kindSignal
	kindClass
	kindClassPair
	kindCaptureSignal
	kindEdge
)

// FNV-1a's parameters, as variables: Go would reject the constant
// expressions their products make as overflowing.
var (
	fnvOffset uint32 = 2166136261
	fnvPrime  uint32 = 16777619
)

func fnvString(h uint32, s string) uint32 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * fnvPrime
	}
	return h
}

// bucket finishes a hash with a mixer, so that FNV's weak low bits still
// spread over the buckets (a model keeps the low bits it needs).
func bucket(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x7feb352d
	h ^= h >> 15
	h *= 0x846ca68b
	h ^= h >> 16
	return h
}

// maxCharRunes bounds the character n-grams: an injection long enough to
// matter shows itself in its first few thousand characters, and the cost
// stays linear.
const maxCharRunes = 4096

// injFeatures appends the buckets of f's features to feats: f is the
// prepared text after folding (foldText), sig the rule signals.
func injFeatures(feats []uint32, f *text, sig uint32) []uint32 {
	feats = signalFeatures(feats, kindSignal, sig, sigCount)
	feats = wordGrams(feats, f)
	var classes wclass
	for i := range f.words {
		classes |= classOf(f.word(i))
	}
	for a := range 16 {
		if classes&(1<<a) == 0 {
			continue
		}
		feats = append(feats, bucket((fnvOffset^kindClass)*fnvPrime^uint32(a)))
		for b := a + 1; b < 16; b++ {
			if classes&(1<<b) != 0 {
				feats = append(feats, bucket(((fnvOffset^kindClassPair)*fnvPrime^uint32(a))*fnvPrime^uint32(b)))
			}
		}
	}
	return charGrams(feats, f.lower)
}

// wordGrams appends the buckets of t's words and word bigrams.
func wordGrams(feats []uint32, t *text) []uint32 {
	prev := fnvOffset ^ kindWord
	for i := range t.words {
		h := fnvString(fnvOffset^kindWord, t.word(i))
		feats = append(feats, bucket(h))
		if i > 0 {
			feats = append(feats, bucket((prev^kindBigram)*fnvPrime^h))
		}
		prev = h
	}
	return feats
}

// signalFeatures appends a bucket per bit set in sig; kind keeps one
// model's signals apart from another's.
func signalFeatures(feats []uint32, kind, sig uint32, count int) []uint32 {
	for b := range uint32(count) {
		if sig&(1<<b) != 0 {
			feats = append(feats, bucket((fnvOffset^kind)*fnvPrime^b))
		}
	}
	return feats
}

// charGrams appends the character 3-, 4- and 5-grams of lower, and the
// 2-grams ending in a Han, kana or Hangul character, with every
// run of spaces read as one space and the text padded by a space at each
// end, so that a word's first and last letters make grams of their own.
func charGrams(feats []uint32, lower string) []uint32 {
	var window [5]rune
	n := 0
	push := func(r rune) {
		window[0], window[1], window[2], window[3], window[4] = window[1], window[2], window[3], window[4], r
		n++
		lo := 3
		if r >= 0x1100 && (isCJK(r) || unicode.Is(unicode.Hangul, r)) {
			lo = 1 // a Han character is a word of its own, a pair often one too
		}
		// The grams end at r; each size extends the previous one leftwards.
		h := fnvOffset ^ kindChar
		for size := 1; size <= 5 && size <= n; size++ {
			h = (h ^ uint32(window[5-size])) * fnvPrime
			if size >= lo {
				feats = append(feats, bucket(h+uint32(size)))
			}
		}
	}
	push(' ')
	space := true
	runes := 0
	for _, r := range lower {
		if runes++; runes > maxCharRunes {
			break
		}
		if unicode.IsSpace(r) {
			if !space {
				push(' ')
			}
			space = true
			continue
		}
		if r == utf8.RuneError {
			r = '?'
		}
		push(r)
		space = false
	}
	if !space {
		push(' ')
	}
	return feats
}

// featsOnStack covers the features of a message of a few hundred
// characters without a heap allocation.
const featsOnStack = 1536

// injectionScore is the model's log-odds for f with signals sig.
func injectionScore(f *text, sig uint32) float32 {
	var stack [featsOnStack]uint32
	return injectionModel.score(0, injFeatures(stack[:0], f, sig))
}
