package rules

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Supersession: a new memory replaces an old one when both fill the same
// slot of the same person with different values. "I moved to Berlin"
// replaces "I live in Paris"; "I work in Paris" does not, nor does "My
// sister lives in Berlin". A wrong replacement hides a true memory, while a
// missed one only leaves a stale memory visible, so the rules answer yes
// only for short single-clause statements they parse completely:
//
//   - slots: where someone lives or moved to, where they work, their age, a
//     favourite thing, a preference in a context, the car they drive, and
//     "my X is Y" for single-valued attributes (phone, e-mail, manager, ...);
//   - languages: English, Czech, German, Chinese, Japanese and Korean, both
//     texts in the same one, since a value compared across languages
//     (Prague, Praha, Prag) cannot be trusted;
//   - owners: the speaker, or a relative or pet ("my sister", "my dog Rex");
//     a household's move ("we moved to Brno") is the speaker's home;
//   - never: questions, negations, several clauses, statements about the past
//     or an uncertain future, additions ("I also work at Bosch") and values
//     that carry more than a name ("in Paris with my wife").
//
// A statement is matched whole, after "now"-like markers ("now", "teď",
// "jetzt", 现在, 今は, 지금은), German "since" adverbials ("seit März") and
// leading fillers ("btw", "übrigens") are dropped. The regexps are compiled
// once, at package init.

// Slot is the subject a fact is about and the value it gives it.
type Slot struct {
	Subject string // normalised owner: "i", "my sister", "my dog rex", ... (lower case)
	Key     string // normalised attribute: "home", "employer", "age", "favourite colour", "preference:<context>", "phone", "email", "manager", "car", ...
	Value   string // normalised value: lower case, trimmed, without "now"-like markers, a leading article or punctuation
}

// FactSlot extracts the slot a short fact states, ok=false when the text is
// not a single-slot personal fact the rules understand.
func FactSlot(text string) (Slot, bool) {
	f, ok := parseSlotFact(text)
	return f.Slot, ok
}

// Supersedes reports whether newText replaces oldText: both are facts about
// the same Subject and Key with different Values, and newText is not a
// statement about the past. The same value restated is a duplicate, not a
// replacement, so it gives false; so does every text FactSlot rejects.
func Supersedes(newText, oldText string) bool {
	n, ok := parseSlotFact(newText)
	if !ok {
		return false
	}
	o, ok := parseSlotFact(oldText)
	return ok && slotSupersedes(n, o)
}

// slotSupersedes is Supersedes on two parsed facts.
func slotSupersedes(n, o slotFact) bool {
	if n.lang != o.lang || n.Subject != o.Subject || n.Key != o.Key {
		return false
	}
	if !compatibleKinds(n.kind, o.kind) || sameSlotValue(n, o) {
		return false
	}
	return !strings.HasPrefix(n.Key, preferenceKey) || sameDomain(n.lang, n.Value, o.Value)
}

const (
	maxFactBytes   = 300 // longer texts are not single facts
	maxValueRunes  = 40
	maxValueWords  = 5
	maxKeyRunes    = 30
	maxAge         = 130
	minPhoneDigits = 5
	preferenceKey  = "preference:"
)

type slotLang uint8

const (
	langEnglish slotLang = iota + 1
	langCzech
	langGerman
	langChinese
	langJapanese
	langKorean
)

// latin reports the languages whose names are capitalised and whose words
// are separated by spaces.
func (l slotLang) latin() bool { return l <= langGerman }

type slotKind uint8

const (
	kindHome slotKind = iota
	kindEmployer
	kindNamedEmployer // a looser employer form: the value must be a company's name
	kindCar
	kindAge
	kindFavourite
	kindPreference
	kindGeneric
)

var fixedKeys = map[slotKind]string{
	kindHome: "home", kindEmployer: "employer", kindNamedEmployer: "employer", kindCar: "car",
}

// placeChecks test a place-like value further, beyond placeValue.
var placeChecks = map[slotKind]func(lang slotLang, raw, v string) bool{
	kindHome:          isHomeValue,
	kindNamedEmployer: isNamedEmployer,
	kindCar:           isCarValue,
}

// valueKind tells values of one key apart that are not alternatives: "My
// manager is Petra" names a person, "My manager is very strict" does not.
type valueKind uint8

const (
	valueAny   valueKind = iota // every value of the slot is an alternative: cities, employers, ages
	valueIdent                  // digits or an e-mail address
	valueName                   // capitalised: "Petra", "Tesla"
	valueNoun                   // after an indefinite article: "a Skoda"
	valueBare                   // lower case without an article: "blue", "strict"
)

func compatibleKinds(a, b valueKind) bool { return a == valueAny || b == valueAny || a == b }

type slotFact struct {
	Slot
	lang slotLang
	kind valueKind
}

// slotRule is one statement shape. Its named groups: rel, adj and name for
// a relative or pet as the subject, val, num for an age, fav for a
// favourite's topic, key for "my X is Y", ctx and ctx2 for a preference's
// context before or after the value.
type slotRule struct {
	lang slotLang
	kind slotKind
	re   *regexp.Regexp
}

func (r *slotRule) group(m []string, name string) string {
	if i := r.re.SubexpIndex(name); i >= 0 {
		return m[i]
	}
	return ""
}

// parseSlotFact finds the first rule whose shape matches the prepared text;
// that rule alone decides, so a later, looser shape never accepts what an
// earlier one refused ("My dog Rex is a beagle" is no age and no "my X is Y").
func parseSlotFact(text string) (slotFact, bool) {
	s, ok := prepareSlotText(text)
	if !ok {
		return slotFact{}, false
	}
	langs := slotLangs(s)
	for i := range slotRules {
		r := &slotRules[i]
		if !slices.Contains(langs, r.lang) {
			continue
		}
		m := r.re.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		f, ok := r.extract(m)
		if !ok || slotBlocked(r.lang, lowerText(s)) {
			return slotFact{}, false
		}
		return f, true
	}
	return slotFact{}, false
}

func (r *slotRule) extract(m []string) (slotFact, bool) {
	subject, ok := slotSubject(r.lang, r.group(m, "adj"), r.group(m, "rel"), r.group(m, "name"))
	if !ok {
		return slotFact{}, false
	}
	f := slotFact{Slot: Slot{Subject: subject}, lang: r.lang}
	val := r.group(m, "val")
	switch r.kind {
	case kindAge:
		f.Key = "age"
		f.Value, ok = parseAge(r.lang, r.group(m, "num"))
	case kindFavourite:
		f.Key, ok = favouriteKey(r.lang, r.group(m, "fav"))
		if ok {
			f.Value, _, ok = cleanSlotValue(r.lang, val)
		}
	case kindPreference:
		f.Key, f.Value, ok = preferenceSlot(r.lang, val, r.group(m, "ctx"), r.group(m, "ctx2"))
	case kindGeneric:
		f.Key, f.Value, f.kind, ok = genericSlot(r.lang, r.group(m, "key"), val)
	default:
		f.Key = fixedKeys[r.kind]
		f.Value, ok = placeValue(r.lang, val)
		if check := placeChecks[r.kind]; ok && check != nil {
			ok = check(r.lang, val, f.Value)
		}
	}
	return f, ok && f.Key != "" && f.Value != ""
}

// slotLangs picks the languages a text can be in from its script: Hangul is
// Korean, kana Japanese, Han alone Chinese, anything else Latin.
func slotLangs(s string) []slotLang {
	var han, kana, hangul bool
	for _, r := range s {
		switch {
		case r < 0x1100:
		case unicode.Is(unicode.Hangul, r):
			hangul = true
		case unicode.In(r, unicode.Hiragana, unicode.Katakana):
			kana = true
		case unicode.Is(unicode.Han, r):
			han = true
		}
	}
	switch {
	case hangul:
		return []slotLang{langKorean}
	case kana:
		return []slotLang{langJapanese}
	case han:
		return []slotLang{langChinese}
	}
	return []slotLang{langEnglish, langGerman, langCzech}
}

// Preparing a text.

var (
	slotPunct = strings.NewReplacer(
		"’", "'", "‘", "'", "，", ",", "？", "?", "！", "!", "：", ":", "；", ";", "\u3000", " ",
		"（", "(", "）", ")", "０", "0", "１", "1", "２", "2", "３", "3", "４", "4",
		"５", "5", "６", "6", "７", "7", "８", "8", "９", "9",
	)
	contractionIm = regexp.MustCompile(`(?i)\bi'm\b`)
	contractionVe = regexp.MustCompile(`(?i)\b(i|we)'ve\b`)
	// After a dropped "jetzt", "seit März" or "übrigens" German puts the
	// verb first: "Jetzt wohne ich in Berlin" is "ich wohne in Berlin".
	germanInverted   = regexp.MustCompile(`(?i)^(wohne|lebe|arbeite|bin|habe|bevorzuge|fahre|trinke|mag|nehme|esse|benutze|nutze) ich (.+)$`)
	germanInvertedWe = regexp.MustCompile(`(?i)^sind wir (.+)$`)
	// germanSince dates a current fact's start: "seit März", "seit 2024",
	// "seit letztem Jahr". "Ab März" (a plan) is no such adverbial.
	germanSince = regexp.MustCompile(`^seit (?:(?:anfang|mitte|ende) )?(?:(?:januar|jänner|februar|märz|april|mai|juni|juli|august|september|oktober|november|dezember)(?: \d{4})?|\d{4}|(?:letzter|letztem|letzten|vorigem|voriger|vorigen|diesem|dieser|einem|einer) (?:woche|monat|jahr|sommer|herbst|winter|frühling|frühjahr)|gestern|montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag)$`)
	cjkMarkers  = strings.NewReplacer(
		"现在", "", "目前", "", "如今", "", "已经", "", "最近は", "", "最近", "", "今年", "",
		"今は", "", "現在は", "", "もう", "", "すでに", "", "既に", "",
	)
)

// prepareSlotText returns the text as a single clause without markers, or
// false for questions, several sentences and invalid or overlong input.
func prepareSlotText(text string) (string, bool) {
	if len(text) > maxFactBytes || !utf8.ValidString(text) {
		return "", false
	}
	s := slotPunct.Replace(text)
	if strings.ContainsAny(s, "?\n\r\t") {
		return "", false
	}
	s = strings.TrimRight(strings.TrimSpace(s), " .!。…~")
	if strings.ContainsAny(s, "!;。") || strings.Contains(s, ". ") {
		return "", false
	}
	words, lead := dropMarkers(strings.Fields(s))
	s = strings.Trim(strings.Join(words, " "), " .,:-…~")
	if hasCJK(s) {
		s = dropJapaneseNow(cjkMarkers.Replace(tightenCJK(s)))
	}
	s = contractionVe.ReplaceAllString(contractionIm.ReplaceAllString(s, "i am"), "$1 have")
	if lead {
		s = germanInverted.ReplaceAllString(s, "ich $1 $2")
		s = germanInvertedWe.ReplaceAllString(s, "wir sind $1")
	}
	return s, s != ""
}

// dropMarkers drops leading fillers and, anywhere, words that only date the
// statement to the present; lead reports that the text lost its first word.
func dropMarkers(words []string) (kept []string, lead bool) {
	for len(words) > 0 {
		n := phraseAt(leadingFillers, words, 0)
		if n == 0 {
			n = markerAt(words, 0)
		}
		if n == 0 {
			break
		}
		words, lead = words[n:], true
	}
	kept = make([]string, 0, len(words))
	for i := 0; i < len(words); {
		if n := markerAt(words, i); n > 0 {
			i += n
			continue
		}
		kept = append(kept, words[i])
		i++
	}
	return kept, lead
}

// markerAt returns how many words from i date the statement to the present
// ("now", "seit März"), or 0.
func markerAt(words []string, i int) int {
	if n := phraseAt(presentMarkers, words, i); n > 0 {
		return n
	}
	for n := min(maxPhraseWords, len(words)-i); n > 1; n-- {
		if germanSince.MatchString(phraseKey(words[i : i+n])) {
			return n
		}
	}
	return 0
}

const maxPhraseWords = 4

// phraseAt returns how many words from i form a phrase of set, longest
// first, or 0.
func phraseAt(set map[string]bool, words []string, i int) int {
	for n := min(maxPhraseWords, len(words)-i); n > 0; n-- {
		if set[phraseKey(words[i:i+n])] {
			return n
		}
	}
	return 0
}

// phraseKey joins words lower case, without the punctuation around them.
func phraseKey(words []string) string {
	parts := make([]string, len(words))
	for j, w := range words {
		parts[j] = strings.Trim(lowerText(w), ",.:")
	}
	return strings.Join(parts, " ")
}

// tightenCJK removes spaces next to Han or kana, which Chinese and Japanese
// do not use between words. Korean keeps its spaces.
func tightenCJK(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return unicode.Is(unicode.Hangul, r) }) >= 0 {
		return s
	}
	var b strings.Builder
	prev := rune(0)
	for i, r := range s {
		if r == ' ' {
			next, _ := utf8.DecodeRuneInString(s[i+1:])
			if isHanOrKana(prev) || isHanOrKana(next) {
				continue
			}
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

func isHanOrKana(r rune) bool {
	return r >= 0x2E80 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

// dropJapaneseNow drops 今 and 現在 ("now") unless Han follows them, as in
// 今日 or 現在地.
func dropJapaneseNow(s string) string {
	for _, m := range []string{"今", "現在"} {
		for i := 0; ; {
			j := strings.Index(s[i:], m)
			if j < 0 {
				break
			}
			at := i + j
			next, _ := utf8.DecodeRuneInString(s[at+len(m):])
			if unicode.Is(unicode.Han, next) {
				i = at + len(m)
				continue
			}
			s = s[:at] + strings.TrimPrefix(s[at+len(m):], "、")
			i = at
		}
	}
	return s
}

// slotBlocked reports words that make a statement something other than a
// current fact: a negation, the past, an addition, a plan or a guess.
func slotBlocked(lang slotLang, lower string) bool {
	if lang == langChinese && (strings.ContainsAny(lastRune(lower), "吗呢吧么") || chineseDont.MatchString(lower)) {
		return true
	}
	for _, sub := range blockedSubstrings[lang] {
		if strings.Contains(lower, sub) {
			return true
		}
	}
	for _, w := range strings.FieldsFunc(lower, func(r rune) bool { return !isLetterOrDigit(r) && r != '\'' }) {
		if blockedWords[lang][w] || lang == langEnglish && strings.HasSuffix(w, "n't") {
			return true
		}
	}
	return false
}

func lastRune(s string) string {
	_, n := utf8.DecodeLastRuneInString(s)
	return s[len(s)-n:]
}

// Subjects.

// slotSubject is "i" without a relative, else "my" and the relative's
// English name, its age adjective and its own name: "my older sister",
// "my dog rex".
func slotSubject(lang slotLang, adj, rel, name string) (string, bool) {
	if rel == "" {
		return "i", adj == "" && name == ""
	}
	canon, ok := relations[lang][lowerText(rel)]
	if !ok {
		return "", false
	}
	parts := []string{"my"}
	if adj != "" {
		a, ok := relationAdjectives[lang][lowerText(adj)]
		if !ok {
			return "", false
		}
		parts = append(parts, a)
	}
	parts = append(parts, canon)
	if name != "" {
		n := lowerText(name)
		if notNames[n] {
			return "", false
		}
		parts = append(parts, n)
	}
	return strings.Join(parts, " "), true
}

// Values.

const badValueChars = ",;()[]{}<>\"|、。"

// cleanSlotValue normalises a value and tells its kind; false for a value
// that says more than one thing ("Paris with my wife", "tea over coffee").
func cleanSlotValue(lang slotLang, raw string) (string, valueKind, bool) {
	v := strings.Trim(raw, " ,.:-'")
	if v == "" || utf8.RuneCountInString(v) > maxValueRunes || strings.ContainsAny(v, badValueChars) {
		return "", valueAny, false
	}
	if !lang.latin() {
		v, ok := cjkValue(lang, v)
		return v, valueAny, ok
	}
	words := strings.Fields(v)
	kind := kindOfValue(lang, v, words)
	if articles[lang][lowerText(words[0])] {
		words = words[1:]
	}
	if len(words) == 0 || len(words) > maxValueWords {
		return "", valueAny, false
	}
	for i, w := range words {
		words[i] = lowerText(w)
		if valueStops[lang][strings.Trim(words[i], ".'-")] {
			return "", valueAny, false
		}
	}
	return strings.Join(words, " "), kind, true
}

func kindOfValue(lang slotLang, v string, words []string) valueKind {
	first := lowerText(words[0])
	switch {
	case indefiniteArticles[lang][first]:
		return valueNoun
	case strings.ContainsAny(v, "0123456789@"):
		return valueIdent
	}
	w := words[0]
	if articles[lang][first] && len(words) > 1 {
		w = words[1]
	}
	if r, _ := utf8.DecodeRuneInString(w); unicode.IsUpper(r) {
		return valueName
	}
	return valueBare
}

// cjkValue checks a Chinese, Japanese or Korean value, whose particles and
// conjunctions show a value that says more than one thing.
func cjkValue(lang slotLang, v string) (string, bool) {
	v = lowerText(v)
	for _, s := range valueStopSubstrings[lang] {
		if strings.Contains(v, s) {
			return "", false
		}
	}
	if lang == langJapanese && strings.Contains(v, "と") && !japaneseOneHead.MatchString(v) {
		return "", false
	}
	if lang != langKorean {
		return v, true
	}
	words := strings.Fields(v)
	if len(words) > 2 {
		return "", false
	}
	for _, w := range words {
		if koreanValueStops[w] || len(words) > 1 && hasKoreanParticle(w) {
			return "", false
		}
	}
	return strings.Join(words, " "), true
}

// japaneseOneHead matches a と that joins the modifier of one head, as in
// 千と千尋の神隠し ("the spiriting away of Sen and Chihiro"), not two values
// (トトロとラピュタ, 友達と東京).
var japaneseOneHead = regexp.MustCompile(`^[^と]+と[^と]+の[^と]+$`)

// chineseDont matches 别 as an imperative "don't" at a clause's start; 别
// inside a value (霸王别姬, 别克) is no negation.
var chineseDont = regexp.MustCompile(`(?:^|,)(?:请|你|您)?(?:千万)?别`)

func hasKoreanParticle(w string) bool {
	for _, p := range []string{"는", "은", "도", "에", "를", "을"} {
		if strings.HasSuffix(w, p) {
			return true
		}
	}
	return false
}
