package redact

import "slices"

// Detectors run their patterns only where a literal they start with occurs
// (a key's prefix, a keyword): one pass over the text finds them all, so a
// megabyte without secrets costs one table lookup per byte.

// anchorLits are the literals of each anchor id; folded ones are matched
// on the lower-cased text.
var anchorLits []struct {
	lits   []string
	folded bool
}

// anchor registers literals and returns their id.
func anchor(folded bool, lits ...string) int {
	anchorLits = append(anchorLits, struct {
		lits   []string
		folded bool
	}{lits, folded})
	return len(anchorLits) - 1
}

// anchorEntry is one literal of an id.
type anchorEntry struct {
	lit string
	id  int
}

// anchorGroup holds the literals that share their first two bytes.
type anchorGroup struct {
	second  byte
	entries []anchorEntry
}

// The literals by first byte, then second: most bytes of a text start no
// literal, and most that do fail on the next byte.
var exactTable, foldedTable [256][]anchorGroup

func init() {
	for id, a := range anchorLits {
		for _, lit := range a.lits {
			t := &exactTable
			if a.folded {
				t = &foldedTable
			}
			groups := t[lit[0]]
			g := slices.IndexFunc(groups, func(g anchorGroup) bool { return g.second == lit[1] })
			if g < 0 {
				groups = append(groups, anchorGroup{second: lit[1]})
				g = len(groups) - 1
			}
			groups[g].entries = append(groups[g].entries, anchorEntry{lit, id})
			t[lit[0]] = groups
		}
	}
}

// scanAnchors returns, for every anchor id, where its literals occur.
func scanAnchors(text, lower string) [][]int {
	hits := make([][]int, len(anchorLits))
	scan := func(s string, t *[256][]anchorGroup) {
		for i := 0; i+1 < len(s); i++ {
			for _, g := range t[s[i]] {
				if g.second != s[i+1] {
					continue
				}
				for _, a := range g.entries {
					if len(s)-i >= len(a.lit) && s[i:i+len(a.lit)] == a.lit {
						hits[a.id] = appendOnce(hits[a.id], i)
					}
				}
			}
		}
	}
	scan(text, &exactTable)
	scan(lower, &foldedTable)
	return hits
}

// appendOnce adds i unless it is already the last position (two literals
// of one id at one place). Every literal is two bytes or more.
func appendOnce(at []int, i int) []int {
	if len(at) > 0 && at[len(at)-1] == i {
		return at
	}
	return append(at, i)
}
