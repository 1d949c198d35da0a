package distill

import (
	"reflect"
	"testing"
)

func TestValidateEvidence(t *testing.T) {
	msgs := []Message{
		{N: 1, Role: RoleUser, Text: "The import dies with `database is locked` at row 21874."},
		{N: 2, Role: RoleAssistant, Text: "Open the DB once with\n  _pragma=busy_timeout(5000)   and WAL."},
		{N: 3, Role: RoleUser, Text: "我们决定用 Caddy 代替 Nginx 做反向代理。"},
		{N: 4, Role: RoleUser, Text: "I said “don't use testify” twice."},
	}
	ev := func(quote string, ids ...int) Evidence { return Evidence{MessageIDs: ids, Quote: quote} }
	cases := []struct {
		name string
		in   []Evidence
		want []Evidence // nil: the lesson is dropped
	}{
		{"exact", []Evidence{ev("database is locked", 1)}, []Evidence{ev("database is locked", 1)}},
		{"case and whitespace", []Evidence{ev("OPEN the db once with _pragma=busy_timeout(5000) and", 2)}, []Evidence{ev("OPEN the db once with _pragma=busy_timeout(5000) and", 2)}},
		{"markdown and quotes folded", []Evidence{ev(`"the import dies with database is locked..."`, 1)}, []Evidence{ev(`"the import dies with database is locked..."`, 1)}},
		{"typographic quotes", []Evidence{ev(`I said "don't use testify"`, 4)}, []Evidence{ev(`I said "don't use testify"`, 4)}},
		{"label copied into quote", []Evidence{ev("[U1] The import dies", 1)}, []Evidence{ev("[U1] The import dies", 1)}},
		{"chinese", []Evidence{ev("用 Caddy 代替 Nginx", 3)}, []Evidence{ev("用 Caddy 代替 Nginx", 3)}},
		{"short chinese", []Evidence{ev("反向代理", 3)}, []Evidence{ev("反向代理", 3)}},
		{"fabricated quote dropped", []Evidence{ev("we will rewrite it in Rust", 1)}, nil},
		{"quote from another message", []Evidence{ev("database is locked", 2)}, nil},
		{"ids narrow to the message holding it", []Evidence{ev("database is locked", 4, 1, 2, 99)}, []Evidence{ev("database is locked", 1)}},
		{"unknown message", []Evidence{ev("database is locked", 7)}, nil},
		{"too short to prove anything", []Evidence{ev("the", 1)}, nil},
		{"one good one bad", []Evidence{ev("made up words here", 1), ev("row 21874", 1)}, []Evidence{ev("row 21874", 1)}},
		{"duplicates folded", []Evidence{ev("row 21874", 1), ev("  ROW 21874 ", 1)}, []Evidence{ev("row 21874", 1)}},
		{"no evidence", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, dropped := ValidateEvidence([]Lesson{{Text: "x", Evidence: c.in}}, msgs)
			if c.want == nil {
				if len(got) != 0 || dropped != 1 {
					t.Fatalf("kept %+v", got)
				}
				return
			}
			if len(got) != 1 || dropped != 0 {
				t.Fatalf("dropped the lesson")
			}
			if !reflect.DeepEqual(got[0].Evidence, c.want) {
				t.Errorf("evidence %+v, want %+v", got[0].Evidence, c.want)
			}
		})
	}
}

func TestNormalizeQuote(t *testing.T) {
	cases := map[string]string{
		`  "Hello   World"  `:  "hello world",
		"...cut here…":         "cut here",
		"[A13]: Some **bold**": "some bold",
		"U7 plain":             "plain",
		"`code`  and ‘single’": "code and 'single", // a trailing quote mark goes: harmless for a substring test
	}
	for in, want := range cases {
		if got := normalizeQuote(in); got != want {
			t.Errorf("normalizeQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
