package textutil

import (
	"slices"
	"testing"
)

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

func TestNaturalCompare(t *testing.T) {
	names := []string{"store-10", "store", "store-2", "capture", "store-1", "store-02x", "store-02", "store-100", "store-b"}
	slices.SortFunc(names, NaturalCompare)
	want := []string{"capture", "store", "store-1", "store-02", "store-2", "store-02x", "store-10", "store-100", "store-b"}
	if !slices.Equal(names, want) {
		t.Fatalf("sorted %q, want %q", names, want)
	}
}
