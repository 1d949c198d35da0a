// Package textutil holds the small text helpers the reports of several
// packages share, so that each is written once.
package textutil

import "strings"

// OneLine is s with its runs of white space folded to one space, cut to n
// runes with an ellipsis: a memory or a reason in one row of a listing.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
