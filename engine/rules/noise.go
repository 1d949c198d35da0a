package rules

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// minMeaningfulRunes: anything shorter carries no memory ("ok", "👍").
const minMeaningfulRunes = 5

// IsNoise reports text with no memory value: agent denials ("I don't have any
// information"), questions about the memory itself ("do you remember"),
// session boilerplate (a bare greeting, HEARTBEAT, "new session started"),
// and text under five characters. Greetings count only as the whole message,
// so "history of the project" and "Hello-world program crashed" are not noise.
func IsNoise(text string) bool {
	s := strings.TrimSpace(Normalize(text))
	if utf8.RuneCountInString(s) < minMeaningfulRunes {
		return true
	}
	t := prepare(s)
	return isNoiseContent(s, &t)
}

// isNoiseContent is IsNoise without the length floor, which capture replaces
// with its own (four CJK characters can be a memory).
func isNoiseContent(s string, t *text) bool {
	return strings.Contains(s, "HEARTBEAT") || t.has(ruleNoise) || isWholeMessage(s, greetingSet)
}

// maxWholeMessageBytes bounds the messages compared against the greeting and
// acknowledgement sets; all their entries are far shorter.
const maxWholeMessageBytes = 64

func isWholeMessage(s string, set map[string]bool) bool {
	return len(s) <= maxWholeMessageBytes && set[bareForm(s)]
}

// bareForm lower-cases s, turns punctuation, symbols and emoji into spaces
// and collapses them, so "Hi there! 👋" and "hi there" compare equal.
func bareForm(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space, kept := false, false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || (kept && unicode.IsMark(r) && !isVariationSelector(r)) {
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteRune(r)
			space, kept = false, true
			continue
		}
		space, kept = true, false
	}
	return b.String()
}

func isVariationSelector(r rune) bool { return 0xFE00 <= r && r <= 0xFE0F }

func bareSet(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, s := range list {
		m[bareForm(Normalize(s))] = true
	}
	return m
}
