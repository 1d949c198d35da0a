package rules

import "testing"

func TestLexiconPatternSyntax(t *testing.T) {
	l := newLexicon()
	l.add(ruleTrigger, []string{"never !mind", "什么 !都/也", "吗 $", "!不 怎么"})
	tests := []struct {
		in   string
		want bool
	}{
		{"never deploy on fridays", true},
		{"never mind", false},
		{"I never", true},
		{"我喜欢什么", true},
		{"我什么都吃", false},
		{"我什么 也不吃", false},
		{"你好吗？", true},
		{"吗啡", false},
		{"怎么办", true},
		{"我不怎么喝", false},
	}
	for _, tt := range tests {
		tx := prepare(tt.in)
		if got := l.match(&tx)&ruleTrigger != 0; got != tt.want {
			t.Errorf("match(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestLexiconPatternSyntaxPanics(t *testing.T) {
	for _, p := range []string{"never $", "!a", "^", "!a !b", "never !"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("addPattern(%q) did not panic", p)
				}
			}()
			newLexicon().addPattern(ruleTrigger, p)
		}()
	}
}
