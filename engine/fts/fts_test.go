package fts

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTerms(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"Docker compose", []string{"docker", "compose"}},
		{"乌龙茶", []string{"乌龙", "龙茶"}},
		{"茶", []string{"茶"}},
		{"I like 乌龙茶!", []string{"i", "like", "乌龙", "龙茶"}},
		{"JINA_API_KEY", []string{"jina_api_key"}},
		{"text-embedding-3-small.", []string{"text-embedding-3-small"}},
		{`" OR 1=1 --`, []string{"or", "1"}},
		{`NEAR(a b) "x* (`, []string{"near", "a", "b", "x"}},
		{"   ", nil},
		{"---", nil},
		{"docker Docker DOCKER", []string{"docker"}},
		{"私はコーヒーが好き", []string{"私は", "はコ", "コー", "ーヒ", "ヒー", "ーが", "が好", "好き"}},
		{"비밀번호는 1234", []string{"비밀", "밀번", "번호", "호는", "1234"}},
		{"café naïve", []string{"café", "naïve"}},
	}
	for _, c := range cases {
		got := Terms(c.in)
		if !slices.Equal(got, c.want) {
			t.Errorf("Terms(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTermsBounded(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		b.WriteString("w")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(" ")
	}
	if n := len(Terms(b.String())); n != MaxQueryTerms {
		t.Fatalf("got %d terms, want %d", n, MaxQueryTerms)
	}
}

func TestMatchQuery(t *testing.T) {
	cases := map[string]string{
		"Docker":        `"docker"`,
		`say "hi"`:      `"say" OR "hi"`,
		"乌龙茶":           `"乌龙" OR "龙茶"`,
		"' OR 1=1 --":   `"or" OR "1"`,
		"*":             "",
		"":              "",
		"a AND b NOT c": `"a" OR "and" OR "b" OR "not" OR "c"`,
	}
	for in, want := range cases {
		if got := MatchQuery(in); got != want {
			t.Errorf("MatchQuery(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIndexText(t *testing.T) {
	got := IndexText("我喜欢Docker")
	for _, want := range []string{" 我 ", " 我喜 ", " 喜欢 ", " 欢 ", "Docker"} {
		if !strings.Contains(got, want) {
			t.Errorf("IndexText = %q, missing %q", got, want)
		}
	}
	if got := IndexText("plain english"); got != "plain english" {
		t.Errorf("IndexText changed plain text: %q", got)
	}
	if got := IndexText("bad \xff byte"); !utf8.ValidString(got) {
		t.Errorf("IndexText returned invalid UTF-8: %q", got)
	}
}

func FuzzMatchQuery(f *testing.F) {
	for _, s := range []string{"", "docker", `"a" NEAR(b c)`, "乌龙茶", "' OR 1=1 --", "\xff\xfe", "a*b^c:d", "(((", "JINA_API_KEY"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		m := MatchQuery(q)
		if !utf8.ValidString(m) {
			t.Fatalf("invalid UTF-8 in %q", m)
		}
		terms := Terms(q)
		if len(terms) > MaxQueryTerms {
			t.Fatalf("%d terms", len(terms))
		}
		// Every term is one quoted string: quotes inside are doubled, so the
		// expression is a sequence of "..." separated by OR.
		for _, term := range terms {
			if term == "" || strings.Trim(term, connectors) != term {
				t.Fatalf("bad term %q", term)
			}
		}
		if m != "" && (!strings.HasPrefix(m, `"`) || !strings.HasSuffix(m, `"`)) {
			t.Fatalf("unquoted expression %q", m)
		}
		_ = IndexText(q)
	})
}
