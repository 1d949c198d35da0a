package rules

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		name, in string
		want     int
	}{
		{"empty", "", 0},
		{"one word", "tea", 1},
		// 34 characters: 9 by length, 7 words.
		{"en", "I prefer dark mode in every editor", 9},
		// 29 characters, 4 words: length decides.
		{"de long words", "Meine Lieblingsfarbe ist Blau", 8},
		// Accented letters count as letters: 29 characters, 5 words and a mark.
		{"cs", "Moje oblíbená barva je modrá.", 8},
		// Punctuation is a token of its own: 5 words + 4 marks beat 17/4.
		{"en punctuation", "a, b; c: d! e", 9},
		{"zh", "我最喜欢的颜色是蓝色", 10},
		{"ja", "私の名前はアンナです", 10},
		// Eight Hangul syllables and two spaces.
		{"ko", "제 이름은 안나예요", 9},
		{"full-width punctuation", "你好。", 3},
		{"mixed", "我叫Anna", 3},
		{"label", "- [preference:agent:main]", 8},
		{"invalid byte is a symbol", "a\xffb", 3},
		{"an unfinished character counts nothing yet", "abc\xe4\xb8", 1},
		{"finished, it counts", "abc\xe4\xb8\xad", 2},
	}
	for _, tt := range tests {
		if got := EstimateTokens(tt.in); got != tt.want {
			t.Errorf("%s: EstimateTokens(%q) = %d, want %d", tt.name, tt.in, got, tt.want)
		}
	}
}

// FuzzEstimateTokens checks what a budget relies on: the estimate is never
// negative, appending text never lowers it (so a block that grows by a
// line never fits where the shorter one did not), and it is at least one
// token per Han character.
func FuzzEstimateTokens(f *testing.F) {
	for _, s := range []string{"", "I prefer dark mode", "我最喜欢的颜色是蓝色", "abc\xe4\xb8", "\xf0\x9f\x98", "a\xffb", "Größe"} {
		f.Add(s, "\xad x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ea, eab := EstimateTokens(a), EstimateTokens(a+b)
		if ea < 0 || eab < ea {
			t.Fatalf("EstimateTokens(%q) = %d, EstimateTokens(%q) = %d", a, ea, a+b, eab)
		}
		if han := strings.Count(a, "字"); ea < han {
			t.Fatalf("EstimateTokens(%q) = %d, fewer than its %d Han characters", a, ea, han)
		}
		if utf8.ValidString(a) && a != "" && strings.TrimSpace(a) != "" && ea == 0 {
			t.Fatalf("EstimateTokens(%q) = 0 for visible text", a)
		}
	})
}
