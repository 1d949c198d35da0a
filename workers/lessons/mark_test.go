package lessons

import (
	"slices"
	"testing"

	"github.com/clawmem/clawmem/distill"
)

func TestSinceMark(t *testing.T) {
	m := func(role, text string) distill.Message { return distill.Message{Role: role, Text: text} }
	a := []distill.Message{m("user", "one"), m("assistant", "ok"), m("user", "two"), m("assistant", "ok")}
	tests := []struct {
		name string
		msgs []distill.Message
		tail []string
		want int
	}{
		{"no mark: everything", a, nil, 4},
		{"mark at the end: nothing", a, tailOf(a), 0},
		{"mark inside: the rest", append(slices.Clone(a), m("user", "three")), tailOf(a), 1},
		{"mark absent (a new window): everything", []distill.Message{m("user", "four"), m("assistant", "ok")}, tailOf(a), 2},
		{"a repeated short reply does not fool a three-message tail", []distill.Message{m("user", "five"), m("assistant", "ok")}, tailOf(a[:2]), 2},
		{"whitespace does not matter", []distill.Message{m("user", "one"), m("assistant", " ok\n"), m("user", "two  "), m("assistant", "ok"), m("user", "x")}, tailOf(a), 1},
		{"the last occurrence counts", append(append(slices.Clone(a), a...), m("user", "y")), tailOf(a), 1},
	}
	for _, tt := range tests {
		if got := len(sinceMark(tt.msgs, tt.tail)); got != tt.want {
			t.Errorf("%s: %d messages after the mark, want %d", tt.name, got, tt.want)
		}
	}
}
