package rules

import (
	"hash/maphash"
	"math/bits"
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

// ReadGist is the gist of a memory's text, remembered (see remembered),
// and the statement it read the text into when the gist was not
// remembered (nil when it was), for a caller that will need it: reading a
// text again costs as much as its gist.
func ReadGist(text string) (Gist, *Statement) {
	slot, tag, v := remembered(text)
	if v&gistRead != 0 {
		return v & gistBits, nil
	}
	s := ReadStatement(text)
	v |= gistOf(s)
	slot.Store(tag | uint64(v))
	return v & gistBits, s
}

// NoiseOf is IsNoise of a memory's text, remembered beside its gist.
func NoiseOf(text string) bool {
	slot, tag, v := remembered(text)
	if v&noiseRead == 0 {
		v |= noiseRead
		if IsNoise(text) {
			v |= noiseIs
		}
		slot.Store(tag | uint64(v))
	}
	return v&noiseIs != 0
}

// The word beside a gist holds whether the text is noise, once read.
const (
	noiseRead Gist = 1 << 3
	noiseIs   Gist = 1 << 4
	gistBits       = ^(noiseRead | noiseIs) & (1<<gistTagShift - 1)
)

// remembered finds what recall has read of text before: the slot of a
// direct-mapped table of gistSlots words that is text's, the tag of text's
// hash it holds above gistTagShift, and below it what was read (zero
// when nothing was, or another text took the slot since). Each read is
// kept at the first recall that needs it, so that a store's memories are
// read once however often recall finds them (1 MiB). Two texts whose
// 64-bit hashes agree in the slot's and tag's 57 bits would share what
// was read of them; at worst that orders one recall's answers
// differently, or drops one memory from it as noise.
func remembered(text string) (slot *atomic.Uint64, tag uint64, v Gist) {
	h := maphash.String(gistSeed, text)
	slot = &gistTable[h&(gistSlots-1)]
	tag = h &^ (1<<gistTagShift - 1)
	if e := slot.Load(); e&^(1<<gistTagShift-1) == tag {
		v = Gist(e & (1<<gistTagShift - 1))
	}
	return slot, tag, v
}

const (
	gistSlots    = 1 << 17
	gistTagShift = 24 // what was read below, the hash's tag above
)

var (
	gistSeed  = maphash.MakeSeed()
	gistTable [gistSlots]atomic.Uint64
)

// ReplacesByOf is ReplacesBy of two memories' texts, which read computes
// from their statements, remembered per pair in a direct-mapped table of
// pairSlots words (512 KiB) as gists are: the memories recall keeps
// finding come back together, and a pair the gists let through cost as
// much to judge again (the replace model's pair features, both texts'
// slots and capture's reading) as the rest of the stage.
func ReplacesByOf(newer, older string, read func() string) string {
	h := maphash.String(gistSeed, newer) ^ bits.RotateLeft64(maphash.String(gistSeed, older)*0x9e3779b97f4a7c15, 29)
	slot := &pairTable[h&(pairSlots-1)]
	tag := h &^ (1<<pairTagShift - 1)
	if e := slot.Load(); e&^(1<<pairTagShift-1) == tag && e&pairRead != 0 {
		return pairVerdicts[e&pairVerdict]
	}
	by := read()
	v := uint64(0)
	for i, w := range pairVerdicts {
		if w == by {
			v = uint64(i)
		}
	}
	slot.Store(tag | pairRead | v)
	return by
}

// A pair's word: the verdict's index in pairVerdicts, a bit that says it
// was read, the hash's tag above.
const (
	pairSlots    = 1 << 16
	pairVerdict  = 3
	pairRead     = 4
	pairTagShift = 16
)

var (
	pairVerdicts = [3]string{"", ByRules, ByModel}
	pairTable    [pairSlots]atomic.Uint64
)

// Forget empties the tables of what was read of texts (ReadGist, NoiseOf,
// ReplacesByOf): a benchmark of their first reading calls it between
// rounds. Nothing else needs it; what they hold never goes stale.
func Forget() {
	for i := range gistTable {
		gistTable[i].Store(0)
	}
	for i := range pairTable {
		pairTable[i].Store(0)
	}
}
