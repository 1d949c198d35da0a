package embed

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"unicode"
)

// local is the offline lexical embedder (see the package doc for what it can
// and cannot match). Each text becomes a bag of hashed features:
//
//   - lower-cased words and pairs of adjacent words, for shared vocabulary;
//   - character trigrams of each word, padded with a space at both ends, so
//     inflections and typos ("memory"/"memories") still overlap;
//   - for Han, Hiragana and Katakana, which are written without spaces,
//     single characters and adjacent character pairs instead of words.
//
// Features are hashed into Dimensions buckets with a sign taken from the hash,
// so collisions cancel on average instead of piling up; counts are damped
// with 1+ln(tf) so a repeated word does not drown the rest; the result is
// L2-normalised so the dot product is the cosine.
type local struct {
	dims    int
	scratch sync.Pool
}

type featureKind uint64

const (
	kindWord featureKind = iota
	kindWordPair
	kindTrigram
	kindCJKChar
	kindCJKPair
	kindBits = 3
)

// kindWeight favours whole words and CJK pairs (the closest thing to a CJK
// word) over trigrams: a text has many trigrams, and unweighted they would
// dominate the vector and make unrelated words with common spellings match.
var kindWeight = [...]float32{
	kindWord:     1,
	kindWordPair: 0.7,
	kindTrigram:  0.35,
	kindCJKChar:  0.6,
	kindCJKPair:  1,
}

type tokenClass uint8

const (
	classWord tokenClass = iota
	classCJK
	classSymbol // a single rune: emoji and other symbols carry meaning
)

type token struct {
	start, end int // into scratch.runes
	class      tokenClass
}

type scratch struct {
	runes  []rune
	tokens []token
	feats  []uint64
}

func newLocal(dims int) *local {
	return &local{
		dims:    dims,
		scratch: sync.Pool{New: func() any { return new(scratch) }},
	}
}

func (l *local) Dimensions() int { return l.dims }

func (l *local) Model() string { return localModelName }

// Queries and passages get the same vector: a lexical model has no notion of
// the asymmetry task-aware models encode.
func (l *local) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	return l.EmbedPassage(ctx, text)
}

func (l *local) EmbedPassage(ctx context.Context, text string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.embed(text)
}

func (l *local) EmbedPassages(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		vec, err := l.embed(text)
		if err != nil {
			return nil, fmt.Errorf("passage %d of %d: %w", i, len(texts), err)
		}
		out[i] = vec
	}
	return out, nil
}

func (l *local) Test(ctx context.Context) TestResult {
	vec, err := l.EmbedPassage(ctx, "test")
	if err != nil {
		return TestResult{Error: err.Error()}
	}
	return TestResult{Success: true, Dimensions: len(vec)}
}

func (l *local) embed(text string) ([]float32, error) {
	if isBlank(text) {
		return nil, ErrEmptyText
	}
	s := l.scratch.Get().(*scratch)
	defer l.scratch.Put(s)

	s.tokenize(text, false)
	if len(s.tokens) == 0 {
		// Only punctuation or invisible characters: fall back to treating
		// every non-space rune as a token so such texts still get a vector.
		s.tokenize(text, true)
	}
	s.features()
	// Sorting groups equal features, which gives term frequencies without a
	// map allocation per text.
	slices.Sort(s.feats)

	vec := make([]float32, l.dims)
	l.accumulate(vec, s.feats, true)
	norm := sumSquares(vec)
	if norm == 0 {
		// Signed features can cancel exactly when few of them collide;
		// unsigned hashing cannot cancel, so the vector stays meaningful.
		l.accumulate(vec, s.feats, false)
		norm = sumSquares(vec)
	}
	scale := float32(1 / math.Sqrt(norm))
	for i := range vec {
		vec[i] *= scale
	}
	return vec, nil
}

func (l *local) accumulate(vec []float32, feats []uint64, signed bool) {
	clear(vec)
	dims := uint64(l.dims)
	for i := 0; i < len(feats); {
		f := feats[i]
		j := i + 1
		for j < len(feats) && feats[j] == f {
			j++
		}
		w := kindWeight[f&(1<<kindBits-1)]
		if tf := j - i; tf > 1 {
			w *= 1 + float32(math.Log(float64(tf)))
		}
		if signed && f>>63 == 1 {
			w = -w
		}
		vec[(f>>kindBits&0xffffffff)%dims] += w
		i = j
	}
}

func sumSquares(vec []float32) float64 {
	var sum float64
	for _, v := range vec {
		sum += float64(v) * float64(v)
	}
	return sum
}

// tokenize lower-cases text into s.runes and splits it into tokens. With
// everything set, runes that are normally separators (punctuation, control
// and format characters) become one-rune symbol tokens too.
func (s *scratch) tokenize(text string, everything bool) {
	s.runes = s.runes[:0]
	s.tokens = s.tokens[:0]
	open := -1 // index into s.tokens of the word or CJK run being extended
	for _, r := range text {
		class, keep := classify(r, everything)
		if !keep {
			open = -1
			continue
		}
		s.runes = append(s.runes, toLower(r))
		n := len(s.runes)
		if open >= 0 && s.tokens[open].class == class && class != classSymbol {
			s.tokens[open].end = n
			continue
		}
		s.tokens = append(s.tokens, token{start: n - 1, end: n, class: class})
		open = len(s.tokens) - 1
	}
}

func classify(r rune, everything bool) (tokenClass, bool) {
	// ASCII symbols (=, +, `, |, ...) are separators: in notes and code they
	// are syntax, and as features they would make every snippet of code look
	// alike. Non-ASCII symbols (emoji, currency, units) are kept as tokens.
	if r < 0x80 {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			return classWord, true
		case everything && !unicode.IsSpace(r):
			return classSymbol, true
		}
		return 0, false
	}
	switch {
	case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana):
		return classCJK, true
	case unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
		return classWord, true
	case unicode.IsSymbol(r):
		return classSymbol, true
	// Matching isBlank's notion of space guarantees that every text it lets
	// through yields at least one token in the fallback pass.
	case everything && !unicode.IsSpace(r):
		return classSymbol, true
	}
	return 0, false
}

func toLower(r rune) rune {
	if r < 0x80 {
		if 'A' <= r && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}
	return unicode.ToLower(r)
}

// features appends the hashed features of s.tokens to s.feats.
func (s *scratch) features() {
	s.feats = s.feats[:0]
	prevWord := -1 // index of the previous word-like token, for word pairs
	for i, tok := range s.tokens {
		runes := s.runes[tok.start:tok.end]
		if tok.class == classCJK {
			prevWord = -1
			for j, r := range runes {
				s.feats = append(s.feats, feature(kindCJKChar, fnvRune(fnvStart(kindCJKChar), r)))
				if j > 0 {
					s.feats = append(s.feats, feature(kindCJKPair, fnvRune(fnvRune(fnvStart(kindCJKPair), runes[j-1]), r)))
				}
			}
			continue
		}
		s.feats = append(s.feats, feature(kindWord, fnvRunes(fnvStart(kindWord), runes)))
		if prevWord >= 0 {
			prev := s.tokens[prevWord]
			h := fnvRunes(fnvStart(kindWordPair), s.runes[prev.start:prev.end])
			h = fnvRune(h, ' ')
			s.feats = append(s.feats, feature(kindWordPair, fnvRunes(h, runes)))
		}
		prevWord = i
		if tok.class == classWord {
			s.trigrams(runes)
		}
	}
}

// trigrams hashes every 3-rune window of " "+word+" ". The padding marks word
// starts and ends, and gives one- and two-rune words a trigram of their own.
func (s *scratch) trigrams(word []rune) {
	padded := func(i int) rune {
		if i == 0 || i == len(word)+1 {
			return ' '
		}
		return word[i-1]
	}
	for i := 0; i < len(word); i++ {
		h := fnvStart(kindTrigram)
		h = fnvRune(h, padded(i))
		h = fnvRune(h, padded(i+1))
		h = fnvRune(h, padded(i+2))
		s.feats = append(s.feats, feature(kindTrigram, h))
	}
}

// FNV-1a over code points rather than bytes: runes are already decoded, and
// mixing a whole code point per step is as well distributed after finish.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnvStart seeds the hash with the feature kind (outside the rune range) so
// the word "ab" and the CJK pair "ab" land in unrelated buckets.
func fnvStart(kind featureKind) uint64 {
	return fnvRune(fnvOffset, rune(unicode.MaxRune+1+int(kind)))
}

func fnvRune(h uint64, r rune) uint64 {
	return (h ^ uint64(r)) * fnvPrime
}

func fnvRunes(h uint64, runes []rune) uint64 {
	for _, r := range runes {
		h = fnvRune(h, r)
	}
	return h
}

// feature finishes the hash and tags it with its kind in the low bits.
// FNV's multiply only carries entropy upwards, so the low bits used for the
// bucket are mixed with the high ones first (a 64-bit avalanche finaliser).
func feature(kind featureKind, h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h&^(1<<kindBits-1) | uint64(kind)
}
