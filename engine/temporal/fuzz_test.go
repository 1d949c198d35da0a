package temporal

import (
	"bytes"
	"encoding/json"
	"testing"
)

func FuzzFind(f *testing.F) {
	for _, cases := range allCases {
		for _, c := range cases {
			f.Add(c.text)
		}
	}
	for _, s := range []string{"", "\xff", "a\xffYesterday \xfe tomorrow", "İstanbul Yesterday", "6.2.", "1.2.3",
		"the 31st", "in May 2024", "2025年2月31日", "mid-", "za týden před dvěma týdny", "언제 사흘 전 일주일 후"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spans := Find(s, ref)
		in := truncate(s, MaxText)
		end := 0
		for i, sp := range spans {
			if sp.Start < end || sp.Start >= sp.End || sp.End > len(in) {
				t.Fatalf("span %d %q at [%d,%d): out of order, overlapping or out of the input (%d bytes, previous end %d)",
					i, sp.Text, sp.Start, sp.End, len(in), end)
			}
			if in[sp.Start:sp.End] != sp.Text {
				t.Fatalf("span %d %q at [%d,%d) reads %q", i, sp.Text, sp.Start, sp.End, in[sp.Start:sp.End])
			}
			if !sp.From.Before(sp.To) {
				t.Fatalf("span %d %q: from %v not before to %v", i, sp.Text, sp.From, sp.To)
			}
			if h, m, sec := sp.From.Clock(); h != 0 || m != 0 || sec != 0 {
				t.Fatalf("span %d %q: from %v is not a midnight", i, sp.Text, sp.From)
			}
			if _, _, ok := (Date{Date: sp.Day()}).Range(); !ok {
				t.Fatalf("span %d %q: Day %q does not parse back", i, sp.Text, sp.Day())
			}
			end = sp.End
		}
		Asks(s)
		checkGatesHideNoMatch(t, s)
	})
}

func FuzzWithDates(f *testing.F) {
	f.Add([]byte(`{"saidAt":1739217600000}`), "We met last Thursday.", 1024)
	f.Add([]byte(`{"saidAt":"2025-02-10T20:00:00Z","source":"chat"}`), "yesterday and 2025-02-06", 64)
	f.Add([]byte(``), "zítra", 100)
	f.Add([]byte(`{"dates":[]}`), "yesterday", 1024)
	f.Add([]byte(`[1]`), "yesterday", 1024)
	f.Add([]byte(`{"a":"\u003c"}`), "上周四", 1024)
	f.Add([]byte(`{`), "today", -1)
	f.Fuzz(func(t *testing.T, meta []byte, text string, limit int) {
		in := bytes.Clone(meta)
		out := WithDates(meta, text, ref, limit)
		if !bytes.Equal(meta, in) {
			t.Fatalf("input changed: %q -> %q", in, meta)
		}
		if bytes.Equal(out, in) {
			return
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(out, &obj); err != nil || obj == nil {
			t.Fatalf("output %q is not a JSON object: %v", out, err)
		}
		if len(out) > limit {
			t.Fatalf("output of %d bytes over the limit %d", len(out), limit)
		}
		if ds, ok := StoredDates(out); !ok || len(ds) == 0 || len(ds) > MaxDates {
			t.Fatalf("output %q: dates %v, %v", out, ds, ok)
		}
	})
}
