package fts

import (
	"slices"
	"testing"
	"unicode/utf8"
)

func tokens(s string) []string {
	var out []string
	Tokens(s, func(t string) { out = append(out, t) })
	return out
}

func TestTokens(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  Hello, World!  ", []string{"hello", "world"}},
		{"JINA_API_KEY text-embedding-3-small v1.2", []string{"jina", "api", "key", "text", "embedding", "3", "small", "v1", "2"}},
		{"Café CAFÉ cafe\u0301", []string{"cafe", "cafe", "cafe"}},
		{"Příliš žluťoučký kůň", []string{"prilis", "zlutoucky", "kun"}},
		{"Straße Ärger", []string{"straße", "arger"}},
		{"Йогурт и мёд", []string{"йогурт", "и", "мёд"}},
		{"Ὀδυσσεύς", []string{"ὀδυσσεύς"}},
		{"हिन्दी भाषा", []string{"हिन्दी", "भाषा"}},
		{IndexText("我最喜欢喝乌龙茶"), []string{"我", "我最", "最", "最喜", "喜", "喜欢", "欢", "欢喝", "喝", "喝乌", "乌", "乌龙", "龙", "龙茶", "茶"}},
		{"\u0301abc", []string{"abc"}},
		{"ab\xffcd", []string{"ab", "cd"}},
		{"x\uE000y", []string{"x\uE000y"}},
		{"١٢٣ ٤", []string{"١٢٣", "٤"}},
	} {
		if got := tokens(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Tokens(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A query term and the same word in a memory fold to the same token, so a
// term is found whatever its case and accents.
func TestTokensFoldQueryTermsLikeText(t *testing.T) {
	for _, w := range []string{"Zürich", "ZÜRICH", "zurich", "ZURICH"} {
		if got := tokens(w); !slices.Equal(got, []string{"zurich"}) {
			t.Errorf("Tokens(%q) = %q", w, got)
		}
	}
}

func FuzzTokens(f *testing.F) {
	for _, s := range []string{"Hello world", "Café", "乌龙茶", "a\xffb", "\u0301", "x_y-z.w", "Ǡ ΐ й"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var n int
		Tokens(s, func(tok string) {
			n++
			if tok == "" || !utf8.ValidString(tok) {
				t.Fatalf("Tokens(%q) yielded %q", s, tok)
			}
			// Folding is idempotent: a token is its own token.
			if again := tokens(tok); len(again) != 1 || again[0] != tok {
				t.Fatalf("token %q of %q re-tokenizes to %q", tok, s, again)
			}
		})
		if n > len(s) {
			t.Fatalf("%d tokens from %d bytes", n, len(s))
		}
	})
}
