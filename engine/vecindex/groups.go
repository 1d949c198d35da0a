package vecindex

import "math/bits"

// Groups is a set of allowed group ids, tested inside the scan. It is a
// bitset, so ids should be small integers (one bit per id up to the largest).
// A nil *Groups allows every group.
type Groups struct {
	bits []uint64
}

// NewGroups returns the set of the given ids.
func NewGroups(ids ...uint32) *Groups {
	g := &Groups{}
	for _, id := range ids {
		g.Add(id)
	}
	return g
}

// Add puts id in the set.
func (g *Groups) Add(id uint32) {
	w := int(id >> 6)
	if w >= len(g.bits) {
		g.bits = append(g.bits, make([]uint64, w+1-len(g.bits))...)
	}
	g.bits[w] |= 1 << (id & 63)
}

// Has reports whether id is in the set; a nil set has every id.
func (g *Groups) Has(id uint32) bool {
	if g == nil {
		return true
	}
	w := int(id >> 6)
	return w < len(g.bits) && g.bits[w]&(1<<(id&63)) != 0
}

// Len is the number of ids in the set (0 for nil, which means all).
func (g *Groups) Len() int {
	if g == nil {
		return 0
	}
	n := 0
	for _, w := range g.bits {
		n += bits.OnesCount64(w)
	}
	return n
}
