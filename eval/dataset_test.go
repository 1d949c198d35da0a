package eval

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestLoadFileMini(t *testing.T) {
	c, err := LoadFile("testdata/mini.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != "mini" || len(c.Sessions) != 3 || len(c.Questions) != 6 || c.Sessions[1].When.Format("2006-01-02") != "2026-03-15" {
		t.Fatalf("conversation %+v", c)
	}
	if ref := c.Index()["mini-s02-t02"]; ref.Session != 1 || ref.Turn != 1 {
		t.Fatalf("index %+v", ref)
	}
	ms := Memories(c)
	if len(ms) != 9 || ms[0].Text != "Ana: I finally adopted a dog last weekend, a beagle called Pepper." ||
		ms[0].Scope != "agent:eval-mini" || ms[0].ID != MemoryID("mini", "mini-s01-t01") || ms[1].Timestamp-ms[0].Timestamp != 1000 {
		t.Fatalf("memories %+v", ms[:2])
	}
}

// Broken files are refused with the file, the line and what is wrong.
func TestParseBadInput(t *testing.T) {
	good, err := os.ReadFile("testdata/mini.json")
	if err != nil {
		t.Fatal(err)
	}
	src := string(good)
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "bad.json:1: empty or truncated file"},
		{"truncated", src[:len(src)/2], "empty or truncated file"},
		{"malformed", strings.Replace(src, `"turns": [`, `"turns": [,`, 1), "bad.json:6: malformed JSON"},
		{"wrong type", strings.Replace(src, `"evidence": ["mini-s01-t01"]`, `"evidence": "mini-s01-t01"`, 1), "questions.evidence is a JSON string"},
		{"unknown field", strings.Replace(src, `"speakers"`, `"speeekers"`, 1), `unknown field "speeekers"`},
		{"unknown evidence", strings.Replace(src, `"evidence": ["mini-s02-t02"]`, `"evidence": ["mini-s09-t02"]`, 1),
			`bad.json:24: question "mini-q02" cites unknown turn "mini-s09-t02"`},
		{"duplicate turn", strings.Replace(src, `"mini-s01-t02", "speaker"`, `"mini-s01-t01", "speaker"`, 1), `bad.json:8: duplicate turn id "mini-s01-t01"`},
		{"duplicate question", strings.Replace(src, `"id": "mini-q02"`, `"id": "mini-q01"`, 1), `bad.json:24: duplicate question id "mini-q01"`},
		{"empty question", strings.Replace(src, `"text": "What breed is Ana's dog?"`, `"text": "  "`, 1), `question "mini-q01" is empty`},
		{"unknown date format", strings.Replace(src, `"date": "2026-03-15"`, `"date": "15/03/2026"`, 1),
			`bad.json:12: session "mini-s02": date "15/03/2026" in an unknown format`},
		{"unknown category", strings.Replace(src, `"category": "temporal"`, `"category": "when"`, 1), `category "when"`},
		{"evidence on none", strings.Replace(src, `"category": "none", "evidence": []`, `"category": "none", "evidence": ["mini-s01-t01"]`, 1), "category none but has evidence"},
		{"no evidence", strings.Replace(src, `"evidence": ["mini-s03-t02"]`, `"evidence": []`, 1), `question "mini-q04" has no evidence`},
		{"invalid UTF-8", strings.Replace(src, "haha", "ha\xffha", 1), "bad.json:9: not valid UTF-8"},
		{"two documents", src + "{}", "more than one JSON document"},
	}
	for _, tt := range tests {
		_, err := Parse("bad.json", []byte(tt.in))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	good, err := os.ReadFile("testdata/mini.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"id":"x","sessions":[{"id":"s","date":"2026-01-01","turns":[{"id":"t","text":"hi"}]}],"questions":[{"id":"q","text":"?","category":"single-hop","evidence":["t"]}]}`))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.json", data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "fuzz.json:") {
				t.Fatalf("error without file and line: %v", err)
			}
			return
		}
		idx := c.Index()
		for _, q := range c.Questions {
			for _, ev := range q.Evidence {
				if _, ok := idx[ev]; !ok {
					t.Fatalf("accepted unknown evidence %q", ev)
				}
			}
		}
	})
}
