package distill

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Shortest quotes accepted as evidence: anything shorter ("the", "ok")
// occurs almost anywhere and proves nothing. A Han character carries about a
// word, so Chinese quotes may be shorter.
const (
	minQuoteRunes    = 6
	minQuoteRunesHan = 3
)

// quoteLabel is a message label a model copied into its quote: "[U12] ",
// "A13: ".
var quoteLabel = regexp.MustCompile(`^\[?[UAua]\d{1,9}\]?:?\s*`)

// quoteFolds makes typographic quotes and markdown emphasis irrelevant to
// matching: models retype them freely when quoting.
var quoteFolds = strings.NewReplacer("\u2018", "'", "\u2019", "'", "\u201c", `"`, "\u201d", `"`, "`", "", "*", "")

// ValidateEvidence keeps only evidence whose quote occurs, after whitespace,
// case and typographic normalisation, in the text of a message it cites; the
// evidence's ids shrink to the messages that really hold the quote. A lesson
// left without evidence is dropped: this is what keeps distillation honest.
// It returns the surviving lessons and how many were dropped.
func ValidateEvidence(lessons []Lesson, msgs []Message) ([]Lesson, int) {
	v := newValidator(msgs)
	out := make([]Lesson, 0, len(lessons))
	for _, l := range lessons {
		l.Evidence = v.check(l.Evidence)
		if len(l.Evidence) == 0 {
			continue
		}
		out = append(out, l)
	}
	return out, len(lessons) - len(out)
}

// validator normalises each cited message once.
type validator struct {
	msgs  []Message
	index map[int]int    // message number → position in msgs
	norm  map[int]string // message number → normalised text
}

func newValidator(msgs []Message) *validator {
	index := make(map[int]int, len(msgs))
	for i, m := range msgs {
		index[m.N] = i
	}
	return &validator{msgs: msgs, index: index, norm: map[int]string{}}
}

// text is message n's normalised text; ok is false for no such message.
func (v *validator) text(n int) (string, bool) {
	if t, ok := v.norm[n]; ok {
		return t, true
	}
	i, ok := v.index[n]
	if !ok {
		return "", false
	}
	t := normalizeForMatch(v.msgs[i].Text)
	v.norm[n] = t
	return t, true
}

// check returns the valid evidence, de-duplicated, at most maxEvidence items.
func (v *validator) check(evidence []Evidence) []Evidence {
	var out []Evidence
	for _, e := range evidence {
		q := normalizeQuote(e.Quote)
		if !longEnough(q) {
			continue
		}
		var ids []int
		for _, n := range e.MessageIDs {
			if t, ok := v.text(n); ok && strings.Contains(t, q) && !slices.Contains(ids, n) {
				ids = append(ids, n)
			}
		}
		if len(ids) == 0 || hasEvidence(out, q) {
			continue
		}
		slices.Sort(ids)
		out = append(out, Evidence{MessageIDs: ids, Quote: strings.TrimSpace(e.Quote)})
		if len(out) == maxEvidence {
			break
		}
	}
	return out
}

func hasEvidence(list []Evidence, normQuote string) bool {
	for _, e := range list {
		if normalizeQuote(e.Quote) == normQuote {
			return true
		}
	}
	return false
}

// normalizeForMatch lower-cases s, folds typographic quotes, drops markdown
// emphasis and collapses whitespace runs to one space.
func normalizeForMatch(s string) string {
	return strings.Join(strings.Fields(quoteFolds.Replace(strings.ToLower(s))), " ")
}

// normalizeQuote is normalizeForMatch after removing what models wrap
// quotes in: a message label, quotation marks, ellipses.
func normalizeQuote(q string) string {
	q = quoteLabel.ReplaceAllString(strings.TrimSpace(q), "")
	q = normalizeForMatch(q)
	for {
		trimmed := strings.TrimSpace(strings.Trim(strings.TrimSuffix(strings.TrimPrefix(q, "..."), "..."), `"'…`))
		if trimmed == q {
			return q
		}
		q = trimmed
	}
}

func longEnough(q string) bool {
	n := utf8.RuneCountInString(q)
	if n >= minQuoteRunes {
		return true
	}
	return n >= minQuoteRunesHan && strings.IndexFunc(q, func(r rune) bool { return unicode.Is(unicode.Han, r) }) >= 0
}
