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

// pairTable finds the literals by their first two bytes: index[b0<<8|b1]
// is 1 + the position in lists of the literals starting with those bytes
// (0: none), so most bytes of a text cost one lookup.
type pairTable struct {
	index [1 << 16]uint16
	lists [][]anchorEntry
}

var exactTable, foldedTable pairTable

func init() {
	for id, a := range anchorLits {
		for _, lit := range a.lits {
			t := &exactTable
			if a.folded {
				t = &foldedTable
			}
			key := int(lit[0])<<8 | int(lit[1])
			if t.index[key] == 0 {
				t.lists = append(t.lists, nil)
				t.index[key] = uint16(len(t.lists))
			}
			k := t.index[key] - 1
			t.lists[k] = append(t.lists[k], anchorEntry{lit, id})
		}
	}
}

// scanAnchors returns, for every anchor id, where its literals occur.
func scanAnchors(text, lower string) [][]int {
	hits := make([][]int, len(anchorLits))
	scan := func(s string, t *pairTable) {
		for i := 0; i+1 < len(s); i++ {
			k := t.index[int(s[i])<<8|int(s[i+1])]
			if k == 0 {
				continue
			}
			for _, a := range t.lists[k-1] {
				if len(s)-i >= len(a.lit) && s[i:i+len(a.lit)] == a.lit {
					hits[a.id] = appendOnce(hits[a.id], i)
				}
			}
		}
	}
	scan(text, &exactTable)
	scan(lower, &foldedTable)
	return hits
}

// hitsIn is the part of hits, an anchor's increasing positions, in
// [from, to).
func hitsIn(hits []int, from, to int) []int {
	s, _ := slices.BinarySearch(hits, from)
	e, _ := slices.BinarySearch(hits, to)
	return hits[s:max(s, e)]
}

// appendOnce adds i unless it is already the last position (two literals
// of one id at one place). Every literal is two bytes or more.
func appendOnce(at []int, i int) []int {
	if len(at) > 0 && at[len(at)-1] == i {
		return at
	}
	return append(at, i)
}
