package textutil

import "testing"

func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a  b\n\tc", 10, "a b c"},
		{"héllo wörld", 5, "héllo…"},
		{"", 3, ""},
		{"exactly", 7, "exactly"},
		{"  a \n\t b  ", 10, "a b"},
		{"ünïcödé text", 6, "ünïcöd…"},
	} {
		if got := OneLine(tc.in, tc.n); got != tc.want {
			t.Errorf("OneLine(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
