package rules

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Text reaches clawmem in any Unicode spelling: "＜system＞" in fullwidth
// forms, "sys\u200btem" split by a zero-width space, "ignore" behind a
// right-to-left override. Every rule matches the normalised text, so a
// spelling the eye reads as one word is one word to the rules too.

// Normalize is the form every rule reads: StripInvisible, then NFKC, which
// folds compatibility forms (fullwidth and small letters and brackets,
// ligatures, circled and superscript digits) into their plain letters.
// Invalid UTF-8 becomes U+FFFD. It is idempotent.
func Normalize(s string) string {
	if isASCII(s) {
		return s // ASCII is its own NFKC, and holds no invisible character
	}
	s = StripInvisible(s)
	// NFKC can yield a character that is itself invisible (U+FFA0 becomes
	// U+3164), whose removal can leave runes that compose; repeating until
	// nothing changes keeps Normalize idempotent.
	// QuickSpanString, unlike IsNormalString, allocates nothing; where it
	// cannot tell, one NFKC pass answers.
	for norm.NFKC.QuickSpanString(s) != len(s) {
		n := StripInvisible(norm.NFKC.String(s))
		if n == s {
			break
		}
		s = n
	}
	return s
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// StripInvisible removes characters that render as nothing but can carry or
// split text: Unicode format characters (category Cf: zero-width spaces and
// joiners, bidi embeddings, overrides and isolates, the soft hyphen, the BOM,
// the tag characters that spell hidden ASCII), the combining grapheme joiner,
// Hangul fillers, and variation selectors beyond the first after a
// character (one selects an emoji's or a CJK character's form; a run of them
// encodes hidden bytes). A zero-width joiner between two pictographs stays,
// since it is what makes 👨‍👩‍👧 one emoji. Everything visible is kept as
// written, so a stored memory keeps the user's own spelling. Invalid UTF-8
// becomes U+FFFD.
func StripInvisible(s string) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || dropRune(s[:i], r, s[i+n:]) {
			return stripFrom(s, i)
		}
		i += n
	}
	return s
}

func stripFrom(s string, i int) string {
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		// Judged against what is kept so far, so that a second pass keeps
		// everything: StripInvisible is idempotent.
		if !dropRune(b.String(), r, s[i+n:]) {
			b.WriteRune(r) // writes U+FFFD for an invalid byte
		}
		i += n
	}
	return b.String()
}

// dropRune reports whether r, after the kept text before and followed by
// the unread text after, is invisible and removed.
func dropRune(before string, r rune, after string) bool {
	switch {
	case r < 0x80:
		return false
	case r == 0x200D:
		return !joinsPictographs(before, after)
	case isSelector(r):
		prev, _ := utf8.DecodeLastRuneInString(before)
		return before == "" || isSelector(prev)
	case r == 0x034F, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

func isSelector(r rune) bool { return isVariationSelector(r) || 0xE0100 <= r && r <= 0xE01EF }

// joinsPictographs reports whether a zero-width joiner between before and
// after stands between two symbols (a variation selector or skin tone
// before it allowed), as in an emoji sequence.
func joinsPictographs(before, after string) bool {
	for before != "" {
		r, n := utf8.DecodeLastRuneInString(before)
		if !isVariationSelector(r) && !(0x1F3FB <= r && r <= 0x1F3FF) {
			break
		}
		before = before[:len(before)-n]
	}
	prev, _ := utf8.DecodeLastRuneInString(before)
	next, _ := utf8.DecodeRuneInString(after)
	return isPictograph(prev) && isPictograph(next)
}

func isPictograph(r rune) bool {
	return r >= 0x2000 && (unicode.Is(unicode.So, r) || unicode.Is(unicode.Sk, r))
}
