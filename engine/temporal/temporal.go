// Package temporal finds dates and time expressions in text and resolves
// them against a reference time: "last Thursday" said on Monday 10 February
// 2025 is Thursday 6 February 2025. clawmem resolves the expressions in a
// memory against the moment it was said (the memory's timestamp, or the
// message's time at capture) and recognises questions that ask *when*
// something happened, so retrieval can prefer memories that carry a date.
//
// Six languages: English, Czech, German, Chinese, Japanese and Korean.
// Resolution is to whole days in the reference time's location; an
// expression naming a week, month or year resolves to that whole range.
// Rules are deliberately plain: a bare weekday ("on Saturday") is the last
// such day before the reference unless the sentence speaks of the future
// ("will", "going to", "tomorrow", …), then the next one.
package temporal

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Span is one temporal expression found in a text, resolved to the days
// [From, To): From is midnight of the first day, To midnight after the last.
type Span struct {
	Text       string    `json:"text"`
	Start, End int       `json:"-"` // byte offsets of Text in the input
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
}

// Day formats a span's range as a date ("2025-02-06") or a range of dates
// ("2025-02-03..2025-02-09").
func (s Span) Day() string {
	last := s.To.AddDate(0, 0, -1)
	if !last.After(s.From) {
		return s.From.Format(time.DateOnly)
	}
	return s.From.Format(time.DateOnly) + ".." + last.Format(time.DateOnly)
}

// Overlaps reports whether the span and [from, to) share a moment.
func (s Span) Overlaps(from, to time.Time) bool { return s.From.Before(to) && from.Before(s.To) }

// habitual follows an expression that names a recurring day, not a date:
// "the last Friday of each month", "jeden Montag"-style rules are not dates.
var habitual = regexp.MustCompile(`^\s+of\s+(?:each|every|the)\s+month`)

// MaxText bounds how much of a text is scanned: temporal expressions in a
// memory or a question sit well within it, and the cost stays flat.
const MaxText = 4096

// rule is one pattern and how a match resolves against the reference day.
// gate is a cheap necessary condition (a word the pattern cannot match
// without, a digit, a CJK character) checked before the pattern runs: most
// texts carry no temporal expression, and forty patterns over every
// candidate of a recall would cost more than the recall.
type rule struct {
	gate    gate
	re      *regexp.Regexp
	resolve func(g []string, ref time.Time, future bool) (from, to time.Time, ok bool)
}

var rules []rule

func add(g gate, pattern string, resolve func(g []string, ref time.Time, future bool) (time.Time, time.Time, bool)) {
	rules = append(rules, rule{gate: g, re: regexp.MustCompile(pattern), resolve: resolve})
}

// features are what gates look at: the word gates the text's words (lower
// case, spaced scripts) open, whether it has an ASCII digit, whether it has
// CJK characters.
type features struct {
	words      wordGates
	digit, cjk bool
}

// wordGates is a set of word gates, one bit each.
type wordGates uint64

// gatesOf maps each word a word gate needs to the gates that need it: the
// scan of a text opens every gate one of its words is needed by, and each
// gate is then one bit test. (Each gate looking its words up in the text
// was three fifths of the time Find took on a sentence with no temporal
// expression, most memories.)
var gatesOf = map[string]wordGates{}

// wordGateCount is how many word gates there are so far.
var wordGateCount int

type gate func(f *features) bool

func scan(lower string) *features {
	f := &features{}
	start := -1
	for i, r := range lower {
		switch {
		case r >= '0' && r <= '9':
			f.digit = true
		case isCJK(r):
			f.cjk = true
		}
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			f.words |= gatesOf[lower[start:i]]
			start = -1
		}
	}
	if start >= 0 {
		f.words |= gatesOf[lower[start:]]
	}
	return f
}

func digits(f *features) bool  { return f.digit }
func cjkText(f *features) bool { return f.cjk }

// words gates on the longest word of any key of a table: every match of a
// pattern built from the table contains it.
func words[V any](table map[string]V) gate {
	if wordGateCount == 64 {
		panic("temporal: more than 64 word gates; widen wordGates")
	}
	bit := wordGates(1) << wordGateCount
	wordGateCount++
	for k := range table {
		longest := ""
		for _, w := range strings.Fields(k) {
			if len(w) > len(longest) {
				longest = w
			}
		}
		if longest != "" && !isCJK(firstRune(longest)) {
			gatesOf[longest] |= bit
		}
	}
	return func(f *features) bool { return f.words&bit != 0 }
}

func either(a, b gate) gate { return func(f *features) bool { return a(f) || b(f) } }

// Find returns the temporal expressions in text resolved against ref, in
// order of position, without overlaps (the longest of overlapping
// matches wins). Invalid UTF-8 is tolerated; text beyond MaxText is not
// scanned.
func Find(text string, ref time.Time) []Span {
	if len(text) > MaxText {
		text = truncate(text, MaxText)
	}
	lower := lowerInPlace(text)
	day := midnight(ref)
	feats := scan(lower)
	future := false
	futureKnown := false
	var out []Span
	for _, r := range rules {
		if !r.gate(feats) {
			continue
		}
		if !futureKnown {
			future, futureKnown = futureMarked(lower), true
		}
		for _, m := range r.re.FindAllStringSubmatchIndex(lower, -1) {
			start, end := m[0], m[1]
			if start == end || !wordEdge(lower, start, end) || habitual.MatchString(lower[end:]) {
				continue
			}
			g := make([]string, len(m)/2)
			for i := range g {
				if m[2*i] >= 0 {
					g[i] = lower[m[2*i]:m[2*i+1]]
				}
			}
			from, to, ok := r.resolve(g, day, future)
			if !ok || !to.After(from) {
				continue
			}
			out = append(out, Span{Text: text[start:end], Start: start, End: end, From: from, To: to})
		}
	}
	if len(out) < 2 {
		return out
	}
	// The longest span wins an overlap ("in May 2024" over "in May", "the
	// 14th of March" over "the 14th"), the earlier rule between equals.
	slices.SortStableFunc(out, func(a, b Span) int { return (b.End - b.Start) - (a.End - a.Start) })
	taken := make([]bool, len(text))
	kept := out[:0]
	for _, s := range out {
		if slices.Contains(taken[s.Start:s.End], true) {
			continue
		}
		for i := s.Start; i < s.End; i++ {
			taken[i] = true
		}
		kept = append(kept, s)
	}
	slices.SortFunc(kept, func(a, b Span) int { return a.Start - b.Start })
	return kept
}

// lowerInPlace lower-cases text rune by rune where that keeps the rune's
// byte length, so that offsets into the result are offsets into text
// (strings.ToLower turns "İ" into three bytes and invalid UTF-8 into
// U+FFFD). Invalid bytes stay as they are; no pattern matches them.
func lowerInPlace(text string) string {
	ascii := true
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(text)
	}
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if l := unicode.ToLower(r); l != r && utf8.RuneLen(l) == n {
			b.WriteRune(l)
		} else {
			b.WriteString(text[i : i+n])
		}
		i += n
	}
	return b.String()
}

// wordEdge reports whether [start, end) is not inside a longer word of a
// spaced language ("may" in "mayor", "sat" in "saturday" is fine since the
// longer rule wins). CJK matches need no edges.
func wordEdge(s string, start, end int) bool {
	if start > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:start])
		if isWordRune(r) && isWordRune(firstRune(s[start:end])) {
			return false
		}
	}
	if end < len(s) {
		r, _ := utf8.DecodeRuneInString(s[end:])
		last, _ := utf8.DecodeLastRuneInString(s[start:end])
		if isWordRune(r) && isWordRune(last) {
			return false
		}
	}
	return true
}

func firstRune(s string) rune { r, _ := utf8.DecodeRuneInString(s); return r }

// isWordRune: letters and digits of spaced scripts; CJK characters never
// join a match to its neighbours.
func isWordRune(r rune) bool {
	switch {
	case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		return true
	case r < 0x80:
		return false
	case isCJK(r):
		return false
	}
	return r >= 0xC0 && r < 0x2000 // Latin-1 letters, Latin Extended, Greek, Cyrillic
}

func isCJK(r rune) bool {
	return (r >= 0x3040 && r <= 0x30FF) || (r >= 0x3400 && r <= 0x9FFF) || (r >= 0xAC00 && r <= 0xD7AF) ||
		(r >= 0x1100 && r <= 0x11FF) || (r >= 0x3130 && r <= 0x318F) || (r >= 0xFF00 && r <= 0xFFEF)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func midnight(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

// Ranges of whole days, weeks (Monday to Sunday), months and years.

func days(from time.Time, n int) (time.Time, time.Time, bool) {
	return from, from.AddDate(0, 0, n), true
}

func oneDay(d time.Time) (time.Time, time.Time, bool) { return days(d, 1) }

func weekOf(d time.Time) (time.Time, time.Time, bool) {
	off := (int(d.Weekday()) + 6) % 7 // Monday 0
	return days(d.AddDate(0, 0, -off), 7)
}

func monthOf(d time.Time) (time.Time, time.Time, bool) {
	f := time.Date(d.Year(), d.Month(), 1, 0, 0, 0, 0, d.Location())
	return f, f.AddDate(0, 1, 0), true
}

func yearOf(d time.Time) (time.Time, time.Time, bool) {
	f := time.Date(d.Year(), 1, 1, 0, 0, 0, 0, d.Location())
	return f, f.AddDate(1, 0, 0), true
}

// unit is a calendar unit a relative expression counts in.
type unit int

const (
	unitDay unit = iota
	unitWeek
	unitMonth
	unitYear
	unitWeekend
)

// shift moves ref by n units (negative: into the past) and returns the
// range that unit covers there: "two weeks ago" is the day two weeks back
// (a day is as precise as such a phrase gets), "last month" the whole month.
func shift(ref time.Time, n int, u unit, whole bool) (time.Time, time.Time, bool) {
	switch u {
	case unitDay:
		return oneDay(ref.AddDate(0, 0, n))
	case unitWeek:
		if whole {
			return weekOf(ref.AddDate(0, 0, 7*n))
		}
		return oneDay(ref.AddDate(0, 0, 7*n))
	case unitMonth:
		d := time.Date(ref.Year(), ref.Month()+time.Month(n), 1, 0, 0, 0, 0, ref.Location())
		if whole {
			return monthOf(d)
		}
		return oneDay(ref.AddDate(0, n, 0))
	case unitYear:
		if whole {
			return yearOf(ref.AddDate(n, 0, 0))
		}
		return oneDay(ref.AddDate(n, 0, 0))
	case unitWeekend:
		// Saturday and Sunday of the week n weeks from ref's.
		f, _, _ := weekOf(ref.AddDate(0, 0, 7*n))
		return days(f.AddDate(0, 0, 5), 2)
	}
	return time.Time{}, time.Time{}, false
}

// weekday resolves a named weekday: dir -1 the last one strictly before
// ref, +1 the next one strictly after, 0 the one in ref's week.
func weekday(ref time.Time, wd time.Weekday, dir int) (time.Time, time.Time, bool) {
	switch dir {
	case -1:
		back := (int(ref.Weekday()) - int(wd) + 7) % 7
		if back == 0 {
			back = 7
		}
		return oneDay(ref.AddDate(0, 0, -back))
	case 1:
		ahead := (int(wd) - int(ref.Weekday()) + 7) % 7
		if ahead == 0 {
			ahead = 7
		}
		return oneDay(ref.AddDate(0, 0, ahead))
	}
	f, _, _ := weekOf(ref)
	return oneDay(f.AddDate(0, 0, (int(wd)+6)%7))
}

// dayOf resolves a day of a month with an optional year. Without a year it
// is the occurrence nearest to ref (within half a year either way).
func dayOf(ref time.Time, month time.Month, day, year int) (time.Time, time.Time, bool) {
	if day < 1 || day > 31 || month < 1 || month > 12 || year < 0 {
		return time.Time{}, time.Time{}, false
	}
	if year == 0 {
		year = nearestYear(ref, month)
	}
	d := time.Date(year, month, day, 0, 0, 0, 0, ref.Location())
	if d.Day() != day { // 31 February
		return time.Time{}, time.Time{}, false
	}
	return oneDay(d)
}

// monthRange resolves a month with an optional year.
func monthRange(ref time.Time, month time.Month, year int) (time.Time, time.Time, bool) {
	if month < 1 || month > 12 || year < 0 {
		return time.Time{}, time.Time{}, false
	}
	if year == 0 {
		year = nearestYear(ref, month)
	}
	return monthOf(time.Date(year, month, 1, 0, 0, 0, 0, ref.Location()))
}

func nearestYear(ref time.Time, month time.Month) int {
	diff := int(month) - int(ref.Month())
	switch {
	case diff > 6:
		return ref.Year() - 1
	case diff < -6:
		return ref.Year() + 1
	}
	return ref.Year()
}

// dayOfMonth resolves "the 14th" alone: this month's if that is still to
// come when the sentence speaks of the future, the nearest otherwise.
func dayOfMonth(ref time.Time, day int, future bool) (time.Time, time.Time, bool) {
	if day < 1 || day > 31 {
		return time.Time{}, time.Time{}, false
	}
	m := ref.Month()
	switch {
	case future && day < ref.Day():
		m++
	case !future && day > ref.Day():
		m--
	}
	d := time.Date(ref.Year(), m, day, 0, 0, 0, 0, ref.Location())
	if d.Day() != day {
		return time.Time{}, time.Time{}, false
	}
	return oneDay(d)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// year reads a year of four digits or two (25 is 2025): 0 when s is
// empty, -1 when it is out of range (1850, 0024), which rejects the date.
func year(s string) int {
	if s == "" {
		return 0
	}
	y := atoi(s)
	if len(s) <= 2 {
		y += 2000
	}
	if y < 1900 || y > 2200 {
		return -1
	}
	return y
}

// alt joins the keys of a word table into a regexp alternation, longest
// first so that "sept" does not shadow "september".
func alt[V any](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, regexp.QuoteMeta(k))
	}
	slices.SortFunc(keys, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return "(?:" + strings.Join(keys, "|") + ")"
}

// number reads a count written in digits or as a word of any language.
func number(s string) int {
	s = strings.TrimSpace(s)
	if n := atoi(s); n > 0 {
		return n
	}
	return numberWords[s]
}

// futureMarked reports whether a text speaks of the future, which decides
// whether a bare weekday is the last or the next one.
func futureMarked(lower string) bool {
	for _, m := range progressive.FindAllStringSubmatch(lower, -1) {
		if !notProgressive[m[1]] {
			return true
		}
	}
	for _, m := range morgen.FindAllStringSubmatch(lower, -1) {
		if !notTomorrow[m[1]] {
			return true
		}
	}
	for _, re := range futureMarkers {
		if re.MatchString(lower) {
			return true
		}
	}
	return false
}
