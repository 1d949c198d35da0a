package rules

import (
	_ "embed"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The learned half of Replaces: a logistic regression over a pair of
// memories, the older one and a newer one, that scores whether the newer
// ends or replaces the older one's fact. Its features are each text's
// words, word pairs and character n-grams (kept apart by role: a change
// word counts in the newer text, a slot word in the older), what the two
// share (how much of the older text's content the newer names, as stems
// and CJK character pairs), pairs of one content unit from each ("live" ×
// "relocated", "スマホ" × "機種変"), and the rules' own reading (a change
// cue, a relative named in one text only, a slot both state). It is
// trained on testdata/facts/pairs_train*.tsv, pairs labelled supersede,
// coexist or unrelated by writers who never saw the rules, and on pairs
// of one writer's texts about different facts (unrelated by
// construction).
//
// The weights are generated, not written: `go generate ./engine/rules`
// runs the trainer (replacemodel_train_test.go), which rewrites
// replace_model.bin; TestReplaceModelReproducible trains again and fails
// if the committed file differs.

//go:embed replace_model.bin
var replaceModelFile []byte

var replaceModel = mustDecodeLinear(replaceModelFile, replaceMagic, "replace_model.bin")

const (
	replaceMagic = "CMREP001"
	replaceBits  = 18
)

// Pair signals: what the rules read in a pair.
const (
	repTellsChange uint32 = 1 << iota
	repRulesReplace
	repNamesValue
	repRelationDiffers
	repRelationNew
	repRelationOld
	repSameSlot
	repSlotSupersede
	repNowCue
	repNotChange
	repNewAsks
	repOldAsks
	repShared0
	repShared1
	repShared2
	repShared3
	repSignalCount = iota
)

// Feature kinds of the pair model, beyond the text kinds.
const (
	kindRepSignal uint32 = iota + 0x40
	kindRepCross
	kindRepShare
)

// Role salts: a word in the newer text and the same word in the older
// one are different features.
const (
	saltNewer uint32 = 0x9e3779b9
	saltOlder uint32 = 0x85ebca6b
)

// maxUnits bounds the content units a text contributes to the cross
// features: a fact is said in a sentence or two.
const maxUnits = 16

// Statement is a memory's text read once for Replaces, so that recall,
// comparing a handful of memories pairwise, reads each text once. What
// costs most (capture's model, the replace model's features and change
// score) is read only when a pair needs it.
type Statement struct {
	orig     string // without the speaker's label
	lower    string
	speaker  string // the transcript's label, "Jana: "
	t        text
	fits     bool // short enough to be one fact
	tells    bool // tellsChange
	relation string
	asks     bool
	breaks   int  // sentence ends followed by more text
	single   bool // one sentence, or short: one fact

	memoryRead, memory bool // mayBeMemory

	slotRead bool
	slot     slotFact
	slotOK   bool

	featuresRead bool
	asNewer      []uint32 // text features, salted for the newer role
	asOlder      []uint32
	units        []uint32 // content units: Latin stems, CJK character pairs

	changeRead bool
	change     float32 // the change head's score
}

// ReadStatement reads text for Replaces.
func ReadStatement(text string) *Statement {
	said := withoutSpeaker(text)
	s := &Statement{orig: said, speaker: text[:len(text)-len(said)], fits: len(said) <= maxFactBytes}
	if !s.fits {
		return s
	}
	s.t = prepare(said)
	s.lower = strings.ToLower(said)
	s.tells = tellsChange(said)
	s.relation = relationOf(s.lower)
	s.asks = s.t.has(ruleAsk) || opensWithInterrogative(&s.t) || strings.ContainsAny(s.t.lower, "?？")
	s.breaks = sentenceBreaks(said)
	s.single = len(said) <= 64 || s.breaks == 0
	return s
}

// isMemory is mayBeMemory, read once.
func (s *Statement) isMemory() bool {
	if !s.memoryRead {
		s.memoryRead, s.memory = true, s.fits && mayBeMemory(s.orig)
	}
	return s.memory
}

// slotFact is parseSlotFact of the text, once.
func (s *Statement) slotFact() (slotFact, bool) {
	if !s.slotRead {
		s.slotRead = true
		if s.fits {
			s.slot, s.slotOK = parseSlotFact(s.orig)
		}
	}
	return s.slot, s.slotOK
}

// told is Replaces, by the rules alone, on two statements.
func (newer *Statement) told(older *Statement) bool {
	return newer.tells && newer.orig != older.orig &&
		replacesTold(newer.lower, older.lower, older.orig, newer.relation, older.relation, older.slotFact)
}

// features reads what the model's heads need, once.
func (s *Statement) features() *Statement {
	if s.featuresRead || !s.fits {
		return s
	}
	s.featuresRead = true
	var stack [featsOnStack]uint32
	feats := wordGrams(stack[:0], &s.t)
	feats = edgeFeatures(feats, &s.t)
	feats = charGrams(feats, s.t.lower)
	s.asNewer = make([]uint32, len(feats))
	for i, f := range feats {
		s.asNewer[i] = bucket(f ^ saltNewer)
	}
	// The older text's words tell the slot; its character n-grams add
	// little there and double the features.
	words := wordGrams(stack[:0], &s.t)
	s.asOlder = make([]uint32, len(words))
	for i, f := range words {
		s.asOlder[i] = bucket(f ^ saltOlder)
	}
	s.units = contentUnits(s.t.lower)
	return s
}

// changeScore is the change head's score of s as the newer text, once.
func (s *Statement) changeScore() float32 {
	if !s.changeRead {
		s.changeRead = true
		var stack [2 * featsOnStack]uint32
		s.change = replaceModel.score(headChange, changeFeatures(stack[:0], s))
	}
	return s.change
}

// sentenceBreaks counts the sentence ends followed by more text.
func sentenceBreaks(s string) int {
	n := 0
	s = strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) })
	for i, r := range s {
		switch r {
		case '.', '!', '?':
			if i+1 < len(s) && s[i+1] == ' ' {
				n++
			}
		case '。', '！', '？':
			n++
		}
	}
	return n
}

// contentUnits are what a text is about, in units two texts can share
// across inflection: a Latin word of three letters or more that is not a
// common word, by its first five letters; each pair of adjacent Han,
// katakana or Hangul characters.
func contentUnits(lower string) []uint32 {
	var units []uint32
	add := func(h uint32) {
		for _, u := range units {
			if u == h {
				return
			}
		}
		if len(units) < maxUnits {
			units = append(units, h)
		}
	}
	var prev rune
	for i := 0; i < len(lower); {
		r, size := utf8.DecodeRuneInString(lower[i:])
		if cjkContent(r) {
			if prev != 0 {
				add(fnvString(fnvString(fnvOffset^kindRepShare, string(prev)), string(r)))
			}
			prev = r
			i += size
			continue
		}
		prev = 0
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			i += size
			continue
		}
		j := i
		for j < len(lower) {
			r, size := utf8.DecodeRuneInString(lower[j:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) || cjkContent(r) {
				break
			}
			j += size
		}
		w := lower[i:j]
		if n := utf8.RuneCountInString(w); n >= 3 && !commonWord(w) && !isFunctionWord(w) {
			if n > 5 {
				w = string([]rune(w)[:5])
			}
			add(fnvString(fnvOffset^kindRepShare, w))
		}
		i = j
	}
	return units
}

// functionWords are short words of every sentence that commonWords,
// which lists words of five letters or more, leaves out.
var functionWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the and but for now not any was are has have had got get its our you your she her his him they them
		this that with from into just also very really still will can all one two new old now yes lol
		der die das den dem des und aber ein eine ist bin hab hat mit von bei zum zur auf aus für
		ich wir sie ihr mein dein sein noch auch nur sehr
		jak ale jen ještě moc tak taky jsem jsi byl byla mám nás náš naše pro při pod nad`) {
		m[w] = true
	}
	return m
}()

func isFunctionWord(w string) bool { return functionWords[w] }

// The model's two heads: whether the newer text tells that something
// changed or ended, read from it alone (supersede pairs' newer texts
// against coexist pairs': a second pet, a plan, an addition), and whether
// the two texts tell the same fact of the same person (supersede and
// coexist pairs against unrelated ones: a shared word, another fact
// changed). A pair replaces when both are sure.
const (
	headChange = iota
	headSameFact
)

// changeFeatures are the newer text's own features.
func changeFeatures(feats []uint32, newer *Statement) []uint32 {
	feats = append(feats, newer.features().asNewer...)
	return signalFeatures(feats, kindRepSignal, pairSignals(newer, nil)&changeSignals, repSignalCount)
}

// changeSignals are the signals of the newer text alone.
const changeSignals = repTellsChange | repRelationNew | repNowCue | repNotChange | repNewAsks

// sameFactFeatures are the pair's: the older text's words, what the two
// share, pairs of one content unit from each, and the rules' reading.
func sameFactFeatures(feats []uint32, newer, older *Statement) []uint32 {
	newer.features()
	feats = append(feats, older.features().asOlder...)
	feats = signalFeatures(feats, kindRepSignal, pairSignals(newer, older), repSignalCount)
	for _, v := range newer.units {
		feats = append(feats, bucket(v^saltNewer))
	}
	for _, u := range older.units {
		for _, v := range newer.units {
			feats = append(feats, bucket((u^kindRepCross)*fnvPrime^v))
		}
	}
	return feats
}

// pairSignals reads the pair with the rules.
func pairSignals(newer, older *Statement) uint32 {
	var sig uint32
	set := func(b uint32, on bool) {
		if on {
			sig |= b
		}
	}
	set(repTellsChange, newer.tells)
	set(repRelationNew, newer.relation != "")
	set(repNowCue, containsAny(newer.lower, nowCues))
	set(repNotChange, containsAny(newer.lower, notChangeCues))
	set(repNewAsks, newer.asks)
	if older == nil {
		return sig
	}
	set(repRulesReplace, newer.told(older))
	set(repNamesValue, namesValueOf(newer.lower, older.lower, older.orig))
	set(repRelationDiffers, newer.relation != older.relation)
	set(repRelationOld, older.relation != "")
	n, nok := newer.slotFact()
	o, ook := older.slotFact()
	if nok && ook && n.lang == o.lang && n.Subject == o.Subject && n.Key == o.Key {
		sig |= repSameSlot
		set(repSlotSupersede, slotSupersedes(n, o))
	}
	set(repOldAsks, older.asks)
	shared := 0
	for _, u := range older.units {
		for _, v := range newer.units {
			if u == v {
				shared++
				break
			}
		}
	}
	switch {
	case shared == 0:
		sig |= repShared0
	case shared == 1:
		sig |= repShared1
	case shared == 2:
		sig |= repShared2
	default:
		sig |= repShared3
	}
	return sig
}

// Replaces reports whether the newer statement ends or replaces the older
// one's fact: the rules read it (a change cue and the old value named, or
// a slot cue), or the model is sure of it and both are one person's. Each
// must be something a memory holds (no question, no remark), and the
// older one a single fact: a text of several sentences holds more than
// the change ends.
func (newer *Statement) Replaces(older *Statement) bool {
	return newer.ReplacesBy(older) != ""
}

// How a change was read: by the rules or by the model.
const (
	ByRules = "rules"
	ByModel = "model"
)

// ReplacesBy is Replaces, saying who read the change (ByRules, ByModel),
// "" for none.
func (newer *Statement) ReplacesBy(older *Statement) string {
	if !newer.fits || !older.fits || newer.orig == older.orig || !older.single || newer.breaks > 1 || newer.asks || older.asks ||
		newer.speaker != older.speaker {
		return ""
	}
	rules := newer.told(older)
	// A relative, a friend or a colleague named in one text and not the
	// other makes them two people's facts, whatever the words.
	if !rules && (newer.relation != older.relation || newer.changeScore() < replaceModel.heads[headChange].threshold) {
		return ""
	}
	if !newer.isMemory() || !older.isMemory() {
		return ""
	}
	if rules {
		return ByRules
	}
	var stack [2 * featsOnStack]uint32
	if replaceModel.score(headSameFact, sameFactFeatures(stack[:0], newer, older)) >= replaceModel.heads[headSameFact].threshold {
		return ByModel
	}
	return ""
}

// mayBeMemory: capture's model does not hold text for a question, a
// request or a remark (it scores at least the floor under which capture
// vetoes even what its rules keep). Recall compares what it found, and a
// store may hold whole turns of a conversation ("Oh no", "Yesss!
// Pierogi secured"), which end no fact and are no fact to end.
func mayBeMemory(text string) bool {
	s, t, ok := captureCandidate(text, CaptureOptions{})
	if !ok {
		return false
	}
	rules := rulesKeep(s, &t)
	return keepScore(s, &t, rules) >= captureModel.heads[headKeep].floor
}

// withoutSpeaker drops a transcript's speaker label ("Jana: …"): the
// name of who said it is in every line of theirs, and would make any two
// of them name each other.
func withoutSpeaker(text string) string {
	i := strings.IndexByte(text, ':')
	if i <= 0 || i > 32 || i+1 >= len(text) || text[i+1] != ' ' {
		return text
	}
	r, _ := utf8.DecodeRuneInString(text)
	if !unicode.IsUpper(r) {
		return text
	}
	for _, c := range text[:i] {
		if !unicode.IsLetter(c) && c != ' ' && c != '-' && c != '.' && c != '\'' {
			return text
		}
	}
	if strings.Count(text[:i], " ") > 2 {
		return text
	}
	return text[i+2:]
}
