// Package rules holds clawmem's message rules: what to strip from an inbound
// message, what is worth capturing and in which category, what is noise or a
// prompt injection, when recall is worth a lookup, and how recalled memories
// are rendered into a prompt. Everything here is a pure function; the word
// lists are compiled once, at package init.
package rules

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// rule is one thing a message can say. Every rule is matched in a single pass
// over the message's words, so adding words to a list costs a map entry, not
// another scan of the text; Go's regexp would take microseconds per list.
type rule uint16

const (
	ruleTrigger       rule = 1 << iota // worth remembering
	ruleMemoryCommand                  // asks to manage the memory itself
	ruleInjection                      // tries to override the agent's instructions
	rulePreference
	ruleDecision
	ruleEntity
	ruleFact
	ruleNoise  // agent denials, questions about memory, session boilerplate
	ruleRecall // the user refers to the past or to themselves
	ruleShell  // starts like a shell command
	ruleAsk    // asks for something: a wh-question, a request, an indirect question
	ruleYesNo  // asks politely or for a yes or no: "can you", "do I", 吗, か
	ruleNote   // tells the memory to keep what follows: "remember that", 记住
)

// Pattern syntax, shared by every word list in vocabulary.go.
//
// A pattern is a sequence of space-separated tokens matched against whole
// lower-cased words:
//
//	a/b/c   any of these words
//	word*   any word starting with "word" (at least prefixKeyLen bytes before *)
//	tok?    the token may be absent
//	*       a gap of 0 to maxGap words
//
// A leading "^" anchors the pattern to the start of the message, and a leading
// "!a/b" token forbids a match right after the word a or b ("!don't forget").
//
// Han and kana are written without spaces, and Korean attaches particles to
// nouns, so a pattern containing Han, kana or Hangul is a plain substring; it
// keeps the "^" and "!a/b" prefixes, with "!" looking at the text right
// before it. A pattern may also end in "!a/b", which forbids a match right
// before the word (or, in a substring pattern, the text) a or b: "never
// !mind", "什么 !都". A substring pattern may end in "$", which asks for the
// end of the text, punctuation aside ("吗 $").
const (
	maxGap       = 3
	prefixKeyLen = 3
)

type token struct {
	words    []string // exact words
	prefixes []string // "word*" without the star
	optional bool
	gap      bool
	absent   bool // a trailing "!a/b": the next word is none of these, or there is none
}

func (t *token) matches(w string) bool {
	for _, a := range t.words {
		if w == a {
			return true
		}
	}
	for _, p := range t.prefixes {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	return false
}

type wordPattern struct {
	rule     rule
	notAfter []string
	tokens   []token
}

func (p *wordPattern) matchAt(t *text, i int) bool {
	if i > 0 && len(p.notAfter) > 0 && oneOf(t.word(i-1), p.notAfter) {
		return false
	}
	return matchTokens(t, i, p.tokens)
}

func matchTokens(t *text, i int, toks []token) bool {
	if len(toks) == 0 {
		return true
	}
	tok, rest := &toks[0], toks[1:]
	if tok.absent {
		return i >= len(t.words) || !tok.matches(t.word(i))
	}
	if tok.gap {
		for n := 0; n <= maxGap && i+n <= len(t.words); n++ {
			if matchTokens(t, i+n, rest) {
				return true
			}
		}
		return false
	}
	if i < len(t.words) && tok.matches(t.word(i)) && matchTokens(t, i+1, rest) {
		return true
	}
	return tok.optional && matchTokens(t, i, rest)
}

type substringPattern struct {
	rule      rule
	notAfter  []string
	notBefore []string
	atEnd     bool
	s         string
}

func (p *substringPattern) matchAt(lower string, i int) bool {
	if !strings.HasPrefix(lower[i:], p.s) {
		return false
	}
	before := strings.TrimRight(lower[:i], " ")
	for _, n := range p.notAfter {
		if strings.HasSuffix(before, n) {
			return false
		}
	}
	after := lower[i+len(p.s):]
	if p.atEnd && strings.IndexFunc(after, isLetterOrDigit) >= 0 {
		return false
	}
	after = strings.TrimLeft(after, " ")
	for _, n := range p.notBefore {
		if strings.HasPrefix(after, n) {
			return false
		}
	}
	return true
}

// wordIndex finds the patterns a word can start: keyed by the word's first
// prefixKeyLen bytes, so exact words and prefixes share one map lookup.
type wordIndex map[string][]*wordPattern

func indexKey(w string) string { return w[:min(len(w), prefixKeyLen)] }

func (x wordIndex) add(p *wordPattern) {
	first := &p.tokens[0]
	for _, a := range append(slices.Clone(first.words), first.prefixes...) {
		k := indexKey(a)
		if !slices.Contains(x[k], p) {
			x[k] = append(x[k], p)
		}
	}
}

type lexicon struct {
	words              wordIndex // patterns matched anywhere
	anchored           wordIndex // patterns matched at the first word only
	byRune             map[rune][]*substringPattern
	anchoredSubstrings []*substringPattern
}

func newLexicon() *lexicon {
	return &lexicon{words: wordIndex{}, anchored: wordIndex{}, byRune: map[rune][]*substringPattern{}}
}

// add compiles patterns into the lexicon under r. A malformed pattern is a
// programming error in this package, so it panics at init.
func (l *lexicon) add(r rule, lists ...[]string) {
	for _, list := range lists {
		for _, p := range list {
			l.addPattern(r, p)
		}
	}
}

func (l *lexicon) addPattern(r rule, pattern string) {
	fields := strings.Fields(strings.ToLower(Normalize(pattern)))
	anchored := len(fields) > 0 && fields[0] == "^"
	if anchored {
		fields = fields[1:]
	}
	var notAfter []string
	if len(fields) > 0 && strings.HasPrefix(fields[0], "!") {
		notAfter = strings.Split(fields[0][1:], "/")
		fields = fields[1:]
	}
	var notBefore []string
	atEnd := len(fields) > 1 && fields[len(fields)-1] == "$"
	if atEnd {
		fields = fields[:len(fields)-1]
	}
	if last := len(fields) - 1; last > 0 && len(fields[last]) > 1 && strings.HasPrefix(fields[last], "!") {
		notBefore = strings.Split(fields[last][1:], "/")
		fields = fields[:last]
	}
	if len(fields) == 0 {
		panic("rules: empty pattern " + pattern)
	}
	for _, f := range fields {
		if strings.HasPrefix(f, "!") {
			panic("rules: \"!\" only opens or ends a pattern: " + pattern)
		}
	}
	if s := strings.Join(fields, " "); hasCJK(s) {
		sp := &substringPattern{rule: r, notAfter: notAfter, notBefore: notBefore, atEnd: atEnd, s: s}
		if anchored {
			l.anchoredSubstrings = append(l.anchoredSubstrings, sp)
			return
		}
		first, _ := utf8.DecodeRuneInString(s)
		if !isCJK(first) {
			panic("rules: substring pattern must start with a CJK character: " + pattern)
		}
		l.byRune[first] = append(l.byRune[first], sp)
		return
	}
	if atEnd {
		panic("rules: a trailing \"$\" needs a CJK substring pattern: " + pattern)
	}
	var toks []token
	for _, f := range fields {
		if f == "*" {
			toks = append(toks, token{gap: true})
			continue
		}
		var tok token
		f, tok.optional = strings.CutSuffix(f, "?")
		for _, a := range strings.Split(f, "/") {
			if p, ok := strings.CutSuffix(a, "*"); ok {
				if len(p) < prefixKeyLen {
					panic("rules: prefix too short in pattern " + pattern)
				}
				tok.prefixes = append(tok.prefixes, p)
			} else {
				tok.words = append(tok.words, a)
			}
		}
		toks = append(toks, tok)
	}
	index := l.words
	if anchored {
		index = l.anchored
	}
	if notBefore != nil {
		toks = append(toks, token{words: notBefore, absent: true})
	}
	// An optional leading token is indexed both ways, so that matching can
	// start from a single map lookup on the first word.
	for len(toks) > 0 && toks[0].optional && anchored {
		index.add(&wordPattern{rule: r, notAfter: notAfter, tokens: toks})
		toks = toks[1:]
	}
	if len(toks) == 0 || toks[0].gap || toks[0].optional || toks[0].absent {
		panic("rules: pattern must start with a required word: " + pattern)
	}
	index.add(&wordPattern{rule: r, notAfter: notAfter, tokens: toks})
}

// match returns every rule t matches.
func (l *lexicon) match(t *text) rule {
	var hits rule
	for i := range t.words {
		w := t.word(i)
		for _, p := range l.words[indexKey(w)] {
			if hits&p.rule != p.rule && p.matchAt(t, i) {
				hits |= p.rule
			}
		}
		if i == 0 {
			for _, p := range l.anchored[indexKey(w)] {
				if hits&p.rule != p.rule && p.matchAt(t, 0) {
					hits |= p.rule
				}
			}
		}
	}
	if !t.cjk {
		return hits
	}
	for i, r := range t.lower {
		if !isCJK(r) {
			continue
		}
		for _, p := range l.byRune[r] {
			if hits&p.rule != p.rule && p.matchAt(t.lower, i) {
				hits |= p.rule
			}
		}
	}
	core := strings.TrimLeftFunc(t.lower, notLetterOrDigit)
	for _, p := range l.anchoredSubstrings {
		if hits&p.rule != p.rule && p.matchAt(core, 0) {
			hits |= p.rule
		}
	}
	return hits
}

type span struct{ start, end int }

// wordsOnStack covers typical chat messages, so their word list needs no
// heap allocation.
const wordsOnStack = 48

// text is a message prepared once for every rule: normalised (Normalize),
// lower-cased and split into words. Han and kana end a word, so "记住my name" still yields "my", "name".
type text struct {
	lower string
	words []span
	cjk   bool
	hits  rule
	done  bool
}

// prepare is inlined into its callers, which lets the word list live on
// their stack.
func prepare(s string) text { return newText(s, make([]span, 0, wordsOnStack)) }

func newText(s string, words []span) text { return splitText(Normalize(s), words) }

// splitText is newText for s already normalised, as parts of a text's
// lower field are.
func splitText(s string, words []span) text {
	t := text{lower: lowerText(s), words: words[:0]}
	lower := t.lower
	start := -1
	for i := 0; i < len(lower); {
		c := lower[i]
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(lower[i:])
		}
		var inWord bool
		switch {
		case c < utf8.RuneSelf:
			inWord = isASCIIAlnum(c) ||
				(c == '\'' && start >= 0 && i+1 < len(lower) && isASCIILetter(lower[i+1]))
		case isCJK(r):
			t.cjk = true
		default:
			inWord = unicode.IsLetter(r) || unicode.IsDigit(r) || (start >= 0 && unicode.IsMark(r))
		}
		if inWord && start < 0 {
			start = i
		} else if !inWord && start >= 0 {
			t.words = append(t.words, span{start, i})
			start = -1
		}
		i += size
	}
	if start >= 0 {
		t.words = append(t.words, span{start, len(lower)})
	}
	return t
}

// lowerText lower-cases s and straightens typographic apostrophes; it copies
// s only when something changes.
func lowerText(s string) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				return lowerFrom(s, i)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if lowerRune(r) != r {
			return lowerFrom(s, i)
		}
		i += n
	}
	return s
}

func lowerFrom(s string, i int) string {
	var b strings.Builder
	b.Grow(len(s) + utf8.UTFMax)
	b.WriteString(s[:i])
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(lowerRune(r))
		i += n
	}
	return b.String()
}

func lowerRune(r rune) rune {
	switch {
	case r < utf8.RuneSelf:
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	case r == '’':
		return '\''
	case isCJK(r):
		return r
	}
	return unicode.ToLower(r)
}

func (t *text) word(i int) string { return t.lower[t.words[i].start:t.words[i].end] }

func (t *text) rules() rule {
	if !t.done {
		t.hits, t.done = vocabulary.match(t), true
	}
	return t.hits
}

func (t *text) has(r rule) bool { return t.rules()&r != 0 }

func oneOf(w string, set []string) bool {
	for _, s := range set {
		if w == s {
			return true
		}
	}
	return false
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isASCIIAlnum(c byte) bool { return isASCIILetter(c) || '0' <= c && c <= '9' }

func notLetterOrDigit(r rune) bool { return !isLetterOrDigit(r) }

func isLetterOrDigit(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// isCJK reports scripts written without spaces between words, plus Hangul,
// whose particles attach to nouns so that whole-word matching misses them.
func isCJK(r rune) bool {
	switch {
	case r < 0x1100:
		return false
	case r <= 0x11FF, // Hangul Jamo
		0x3040 <= r && r <= 0x30FF,   // Hiragana, Katakana
		0x3130 <= r && r <= 0x318F,   // Hangul compatibility Jamo
		0x3400 <= r && r <= 0x4DBF,   // Han extension A
		0x4E00 <= r && r <= 0x9FFF,   // Han
		0xAC00 <= r && r <= 0xD7AF,   // Hangul syllables
		0xF900 <= r && r <= 0xFAFF,   // Han compatibility
		0xFF66 <= r && r <= 0xFF9F,   // half-width Katakana
		0x20000 <= r && r <= 0x3134F: // Han extensions B–G
		return true
	}
	return false
}

func hasCJK(s string) bool {
	for _, r := range s {
		if isCJK(r) {
			return true
		}
	}
	return false
}
