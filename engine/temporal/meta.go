package temporal

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/clawmem/clawmem/internal/lrucache"
)

// Date is a resolved expression as a memory's metadata keeps it, under
// "dates": {"text": "last Thursday", "date": "2025-02-06"}; a week, month
// or year is a range "2025-02-03..2025-02-09".
type Date struct {
	Text string `json:"text"`
	Date string `json:"date"`
}

// MaxDates bounds how many resolved expressions one memory keeps.
const MaxDates = 8

// Metadata keys: SaidAtKey is when the text was said (Unix milliseconds
// or RFC 3339), the reference relative expressions resolve against;
// DatesKey holds the resolved expressions.
const (
	SaidAtKey = "saidAt"
	DatesKey  = "dates"
)

// Dates resolves the expressions in text against said.
func Dates(text string, said time.Time) []Date {
	spans := Find(text, said)
	if len(spans) > MaxDates {
		spans = spans[:MaxDates]
	}
	out := make([]Date, len(spans))
	for i, s := range spans {
		out[i] = Date{Text: s.Text, Date: s.Day()}
	}
	return out
}

// WithDates returns meta with the text's expressions resolved under
// "dates", against meta's "saidAt" when it has one, else against fallback
// (the moment of storing). Metadata that is not a JSON object, already has
// "dates", or would outgrow limit bytes is returned as it is; so is meta
// when the text names no time.
func WithDates(meta json.RawMessage, text string, fallback time.Time, limit int) json.RawMessage {
	var obj map[string]json.RawMessage
	if len(bytes.TrimSpace(meta)) == 0 {
		obj = map[string]json.RawMessage{}
	} else if err := json.Unmarshal(meta, &obj); err != nil || obj == nil {
		return meta
	}
	if _, ok := obj[DatesKey]; ok {
		return meta
	}
	said := fallback
	if t, ok := saidAt(obj[SaidAtKey]); ok {
		said = t
	}
	ds := Dates(text, said)
	if len(ds) == 0 {
		return meta
	}
	raw, err := json.Marshal(ds)
	if err != nil {
		return meta
	}
	obj[DatesKey] = raw
	out, err := json.Marshal(obj)
	if err != nil || len(out) > limit {
		return meta
	}
	return out
}

func saidAt(raw json.RawMessage) (time.Time, bool) {
	if len(raw) == 0 {
		return time.Time{}, false
	}
	var ms int64
	if json.Unmarshal(raw, &ms) == nil && ms > 0 {
		return time.UnixMilli(ms).UTC(), true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// StoredDates reads the resolved expressions a memory's metadata carries;
// ok is false when it has none (a memory stored before dates were kept).
func StoredDates(meta json.RawMessage) (ds []Date, ok bool) {
	if !bytes.Contains(meta, []byte(`"`+DatesKey+`"`)) {
		return nil, false
	}
	var obj struct {
		Dates []Date `json:"dates"`
	}
	if json.Unmarshal(meta, &obj) != nil || obj.Dates == nil {
		return nil, false
	}
	return obj.Dates, true
}

// Range parses a Date's "2025-02-06" or "2025-02-03..2025-02-09" into the
// days [from, to).
func (d Date) Range() (from, to time.Time, ok bool) {
	a, b, isRange := strings.Cut(d.Date, "..")
	from, err := time.Parse(time.DateOnly, a)
	if err != nil {
		return time.Time{}, time.Time{}, false
	}
	last := from
	if isRange {
		if last, err = time.Parse(time.DateOnly, b); err != nil || last.Before(from) {
			return time.Time{}, time.Time{}, false
		}
	}
	return from, last.AddDate(0, 0, 1), true
}

// Note renders dates for a reader: "last Thursday = 2025-02-06; in March =
// 2025-03-01..2025-03-31". Expressions that carry their year already are
// left out. Empty when nothing is left.
func Note(ds []Date) string {
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		if d.Text == "" || d.Date == "" || hasYear.MatchString(d.Text) {
			continue
		}
		parts = append(parts, d.Text+" = "+d.Date)
	}
	return strings.Join(parts, "; ")
}

var hasYear = regexp.MustCompile(`\d{4}`)

// NoteFor is Note for a memory: the dates stored with it, or for a memory
// stored without them its text resolved against its timestamp (Unix ms).
// A text's note is remembered (parsedNotes): the query service asks for
// the note of every memory it returns, and finding a text's dates, which
// capture stores only when there are some, cost a dated memory some 70 µs
// at every recall that returned it.
func NoteFor(meta json.RawMessage, text string, ts int64) string {
	if ds, ok := StoredDates(meta); ok {
		return Note(ds)
	}
	k := noteKey{text, ts}
	if note, ok := parsedNotes.Get(k, nil); ok {
		return note
	}
	note := Note(Dates(text, time.UnixMilli(ts).UTC()))
	parsedNotes.Add(k, note)
	return note
}

// parsedNotes are the notes NoteFor found in texts, by text and time.
var parsedNotes = lrucache.New[noteKey, string](4096, 0)

type noteKey struct {
	text string
	ts   int64
}
