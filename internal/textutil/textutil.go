// Package textutil holds the small text helpers the reports of several
// packages share, so that each is written once.
package textutil

import (
	"cmp"
	"strings"
)

// OneLine is s with its runs of white space folded to one space, cut to n
// runes with an ellipsis: a memory or a reason in one row of a listing.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// NaturalCompare orders names as people count: runs of digits compare by
// their value, so store-2 comes before store-10 (names equal but for
// leading zeros fall back to byte order). It returns -1, 0 or +1.
func NaturalCompare(a, b string) int {
	return cmp.Or(naturalCompare(a, b), strings.Compare(a, b))
}

func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			// Leading zeros do not change a number; a longer number is
			// a larger one, and equal lengths compare digit by digit.
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digitRun is the length of s's leading run of ASCII digits.
func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
