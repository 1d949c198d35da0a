package rules

import (
	"hash/maphash"
	"sync/atomic"
)

// Gist is what ReplacesBy needs to know of a text before it can say
// anything of a pair: whether the text may be the newer one of a change
// (one fact or two, no question, and either a change cue or a change the
// model reads), whether it may be the older one (a single fact, no
// question), whom it is about and who said it. Recall compares its first
// results pairwise; most memories tell no change, and their gists let it
// skip reading them and scoring the change model, which cost a tenth of a
// recall's CPU. A gist is a necessary condition, never a sufficient one:
// a pair it lets through is read in full.
type Gist uint32

const (
	gistRead  Gist = 1 << iota // a gist, not the zero value
	gistNewer                  // may be the newer text of a change
	gistOlder                  // may be the older text of a change

	gistRelationShift = 8  // relationIndex, 0 for none
	gistSpeakerShift  = 16 // a byte of the speaker label's hash
)

// MayReplace reports whether newer.ReplacesBy(older) can be anything but
// "" for texts with these gists: false means it is "".
func (newer Gist) MayReplace(older Gist) bool {
	const same = ^Gist(1<<gistRelationShift - 1) // relation and speaker
	return newer&(gistRead|gistNewer) == gistRead|gistNewer && older&(gistRead|gistOlder) == gistRead|gistOlder &&
		newer&same == older&same
}

// gistOf reads the gist of s.
func gistOf(s *Statement) Gist {
	g := gistRead
	g |= Gist(relationIndex[s.relation]) << gistRelationShift
	g |= Gist(maphash.String(gistSeed, s.speaker)&0xff) << gistSpeakerShift
	if !s.fits || s.asks {
		return g
	}
	// ReplacesBy's conditions on each text alone.
	if s.single {
		g |= gistOlder
	}
	if s.breaks <= 1 && (s.tells || s.changeScore() >= replaceModel.heads[headChange].threshold) {
		g |= gistNewer
	}
	return g
}

// relationIndex numbers relationWords from 1, so that a gist holds the
// one a text names in a byte.
var relationIndex = func() map[string]uint8 {
	if len(relationWords) > 255 {
		panic("rules: more relation words than a gist's byte holds")
	}
	m := make(map[string]uint8, len(relationWords))
	for i, w := range relationWords {
		if _, ok := m[w]; !ok {
			m[w] = uint8(i + 1)
		}
	}
	return m
}()

// GistOf is the gist of a memory's text. Gists are remembered in a
// direct-mapped table of gistSlots words, each the gist with the text's
// hash above it, so that a store's memories are read once however often
// recall finds them (1 MiB; a text whose slot another took is read
// again). Two texts whose 64-bit hashes agree in the slot's and tag's 57
// bits would share a gist; at worst that orders one recall's answers
// differently.
func GistOf(text string) Gist {
	h := maphash.String(gistSeed, text)
	slot := &gistTable[h&(gistSlots-1)]
	tag := h &^ (1<<gistTagShift - 1)
	if e := slot.Load(); e&^(1<<gistTagShift-1) == tag && e != 0 {
		return Gist(e & (1<<gistTagShift - 1))
	}
	g := gistOf(ReadStatement(text))
	slot.Store(tag | uint64(g))
	return g
}

const (
	gistSlots    = 1 << 17
	gistTagShift = 24 // a gist's bits below, the hash's above
)

var (
	gistSeed  = maphash.MakeSeed()
	gistTable [gistSlots]atomic.Uint64
)
