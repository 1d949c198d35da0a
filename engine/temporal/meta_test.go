package temporal

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// elsewhen is a fallback far from ref: a result resolved against it
// instead of against saidAt shows.
var elsewhen = time.Date(2030, 6, 15, 12, 0, 0, 0, time.UTC)

func datesOf(t *testing.T, meta json.RawMessage) []Date {
	t.Helper()
	ds, ok := StoredDates(meta)
	if !ok {
		t.Fatalf("no dates in %s", meta)
	}
	return ds
}

func TestWithDatesSaidAt(t *testing.T) {
	for name, said := range map[string]string{
		"millis":  strconv.FormatInt(ref.UnixMilli(), 10),
		"rfc3339": `"2025-02-10T20:00:00Z"`,
		"offset":  `"2025-02-10T21:00:00+01:00"`,
	} {
		meta := json.RawMessage(`{"source":"chat","saidAt":` + said + `}`)
		out := WithDates(meta, "We met last Thursday.", elsewhen, 1024)
		if got, want := datesOf(t, out), []Date{{"last Thursday", "2025-02-06"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: dates %v, want %v", name, got, want)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(out, &obj); err != nil {
			t.Fatal(err)
		}
		if string(obj["source"]) != `"chat"` || string(obj[SaidAtKey]) != said {
			t.Errorf("%s: other keys changed: %s", name, out)
		}
	}
}

// An RFC 3339 saidAt resolves in its own offset: 23:30 in New York on the
// 10th is the 11th in UTC, and "yesterday" there is still the 9th.
func TestWithDatesSaidAtLocalDay(t *testing.T) {
	out := WithDates(json.RawMessage(`{"saidAt":"2025-02-10T23:30:00-05:00"}`), "I called yesterday.", elsewhen, 1024)
	if got := datesOf(t, out); len(got) != 1 || got[0].Date != "2025-02-09" {
		t.Errorf("dates %v, want yesterday = 2025-02-09", got)
	}
}

func TestWithDatesFallback(t *testing.T) {
	for _, meta := range []string{``, `  `, `{}`, `{"saidAt":"soon"}`, `{"saidAt":0}`, `{"saidAt":-5}`, `{"saidAt":null}`,
		`{"saidAt":"2025-02-10"}`, `{"saidAt":1.5e12}`} {
		out := WithDates(json.RawMessage(meta), "I called yesterday.", ref, 1024)
		if got, want := datesOf(t, out), []Date{{"yesterday", "2025-02-09"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("meta %q: dates %v, want %v (resolved against the fallback)", meta, got, want)
		}
	}
}

func TestWithDatesUnchanged(t *testing.T) {
	for _, c := range []struct{ meta, text string }{
		{`{"dates":[]}`, "yesterday"}, // already resolved: kept as it is
		{`{"dates":[{"text":"then","date":"2020-01-01"}],"saidAt":1}`, "yesterday"},
		{`[1,2]`, "yesterday"}, // not an object
		{`"text"`, "yesterday"},
		{`42`, "yesterday"},
		{`null`, "yesterday"},
		{`{"broken":`, "yesterday"},
		{`{"a":1}`, "nothing temporal here"}, // nothing to add
		{``, "nothing temporal here"},
		{`{"a":1}`, ""},
	} {
		meta := json.RawMessage(c.meta)
		if out := WithDates(meta, c.text, ref, 1024); !bytes.Equal(out, meta) {
			t.Errorf("WithDates(%q, %q) = %s, want it unchanged", c.meta, c.text, out)
		}
	}
}

func TestWithDatesLimit(t *testing.T) {
	meta := json.RawMessage(`{"source":"chat"}`)
	text := "yesterday, last Thursday and in two weeks"
	full := WithDates(meta, text, ref, 1<<20)
	if bytes.Equal(full, meta) {
		t.Fatal("no dates added")
	}
	if out := WithDates(meta, text, ref, len(full)); !bytes.Equal(out, full) {
		t.Errorf("at the limit: %s, want %s", out, full)
	}
	if out := WithDates(meta, text, ref, len(full)-1); !bytes.Equal(out, meta) {
		t.Errorf("over the limit: %s, want the input", out)
	}
	if out := WithDates(meta, text, ref, 0); !bytes.Equal(out, meta) {
		t.Errorf("limit 0: %s, want the input", out)
	}
}

func TestDatesMax(t *testing.T) {
	text := strings.Repeat("today and yesterday, ", MaxDates)
	if ds := Dates(text, ref); len(ds) != MaxDates || ds[0] != (Date{"today", "2025-02-10"}) {
		t.Errorf("Dates = %v, want the first %d", ds, MaxDates)
	}
	if ds := Dates("nothing", ref); ds == nil || len(ds) != 0 {
		t.Errorf("Dates(nothing) = %#v, want empty", ds)
	}
}

func TestStoredDates(t *testing.T) {
	text := "Last Thursday we booked the hotel for the 14th; we leave in March."
	out := WithDates(json.RawMessage(`{"saidAt":`+strconv.FormatInt(ref.UnixMilli(), 10)+`}`), text, elsewhen, 1024)
	ds, ok := StoredDates(out)
	if want := Dates(text, ref); !ok || !reflect.DeepEqual(ds, want) {
		t.Errorf("round trip: %v %v, want %v", ds, ok, want)
	}
	if want := []Date{{"Last Thursday", "2025-02-06"}, {"the 14th", "2025-02-14"}, {"in March", "2025-03-01..2025-03-31"}}; !reflect.DeepEqual(ds, want) {
		t.Errorf("dates %v, want %v", ds, want)
	}
	if ds, ok := StoredDates(json.RawMessage(`{"dates":[]}`)); !ok || len(ds) != 0 {
		t.Errorf("empty dates: %v %v, want none but ok", ds, ok)
	}
	for _, meta := range []string{``, `null`, `{}`, `{"source":"dates"}`, `{"dates":"2025-02-06"}`, `{"dates":null}`,
		`{"x":{"dates":[{"text":"a","date":"2025-02-06"}]}}`, `{"dates":[`, `[{"dates":[]}]`} {
		if ds, ok := StoredDates(json.RawMessage(meta)); ok {
			t.Errorf("StoredDates(%s) = %v, true; want none", meta, ds)
		}
	}
}

func TestDateRange(t *testing.T) {
	d := func(day int) time.Time { return time.Date(2025, 2, day, 0, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		date     string
		from, to time.Time
	}{
		{"2025-02-06", d(6), d(7)},
		{"2025-02-03..2025-02-09", d(3), d(10)},
		{"2025-02-06..2025-02-06", d(6), d(7)},
		{"2025-02-01..2025-02-28", d(1), time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)},
	} {
		from, to, ok := Date{Date: c.date}.Range()
		if !ok || !from.Equal(c.from) || !to.Equal(c.to) {
			t.Errorf("Range(%q) = %v, %v, %v", c.date, from, to, ok)
		}
	}
	for _, bad := range []string{"", "yesterday", "2025-02-30", "2025-2-6", "2025-02-09..2025-02-03", "2025-02-06..",
		"..2025-02-06", "2025-02-06..x", "2025-02-06..2025-02-07..2025-02-08", "2025-02-06T00:00:00Z"} {
		if from, to, ok := (Date{Date: bad}).Range(); ok {
			t.Errorf("Range(%q) = %v, %v, true; want rejected", bad, from, to)
		}
	}
	// Every span's Day parses back to the span.
	for _, s := range Find("yesterday, last week, in March, 2024年, the 14th", ref) {
		from, to, ok := Date{Date: s.Day()}.Range()
		if !ok || !from.Equal(s.From) || !to.Equal(s.To) {
			t.Errorf("%q: Range(%q) = %v, %v, %v; span [%v, %v)", s.Text, s.Day(), from, to, ok, s.From, s.To)
		}
	}
}

func TestNote(t *testing.T) {
	ds := []Date{
		{"last Thursday", "2025-02-06"},
		{"6 February 2025", "2025-02-06"}, // carries its year
		{"2025年3月", "2025-03-01..2025-03-31"},
		{"", "2025-02-06"},
		{"today", ""},
		{"in March", "2025-03-01..2025-03-31"},
	}
	if got, want := Note(ds), "last Thursday = 2025-02-06; in March = 2025-03-01..2025-03-31"; got != want {
		t.Errorf("Note = %q, want %q", got, want)
	}
	if got := Note(nil); got != "" {
		t.Errorf("Note(nil) = %q", got)
	}
	if got := Note([]Date{{"in 2024", "2024-01-01..2024-12-31"}}); got != "" {
		t.Errorf("Note(year only) = %q, want empty", got)
	}
}

func TestNoteFor(t *testing.T) {
	ts := ref.UnixMilli()
	stored := json.RawMessage(`{"dates":[{"text":"back then","date":"2020-01-01"}]}`)
	if got := NoteFor(stored, "I called yesterday.", ts); got != "back then = 2020-01-01" {
		t.Errorf("stored: %q", got)
	}
	// Stored and empty: the text was resolved at capture and named no day.
	if got := NoteFor(json.RawMessage(`{"dates":[]}`), "I called yesterday.", ts); got != "" {
		t.Errorf("stored empty: %q", got)
	}
	for _, meta := range []string{``, `{}`, `{"source":"chat"}`, `not json`} {
		if got := NoteFor(json.RawMessage(meta), "I called yesterday.", ts); got != "yesterday = 2025-02-09" {
			t.Errorf("meta %q: %q, want the text resolved against its timestamp", meta, got)
		}
	}
	// Remembered by text and time: the same text said a day later is
	// resolved against its own time.
	if got := NoteFor(nil, "I called yesterday.", ts+24*3600*1000); got != "yesterday = 2025-02-10" {
		t.Errorf("a day later: %q", got)
	}
	if got := NoteFor(nil, "I called yesterday.", ts); got != "yesterday = 2025-02-09" {
		t.Errorf("remembered: %q", got)
	}
}
