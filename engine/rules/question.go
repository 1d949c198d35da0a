package rules

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Questions and requests are not memories: "Which fruit do I like best?"
// names a preference without stating one. Capture therefore looks at each
// sentence of a message and keeps the message only when a sentence that
// carries a trigger tells rather than asks:
//
//   - a sentence that asks openly is never a statement: a wh-question ("which
//     fruit do I like", 我喜欢什么茶), a request for what the memory holds
//     ("tell me what I like", 教えて) or an indirect question ("I wonder which
//     editor I prefer");
//   - a sentence that asks for yes or no ("do I prefer tea", "...?", 吗, か)
//     is a statement again when it tells the memory to keep something ("can
//     you note that I prefer tea?") or when only a question tag asks ("I live
//     in Prague, right?", 对吧？, よね？, 맞죠?);
//   - anything else that carries a trigger is a statement.

// statesContent reports whether a sentence of t, a message that carries a
// capture trigger, states it rather than asks.
func statesContent(t *text) bool {
	lower := t.lower
	end := sentenceEnd(lower, 0)
	if end == len(lower) && fillers(t) == 0 {
		return sentenceStates(t)
	}
	for start := 0; start < len(lower); start, end = end, sentenceEnd(lower, end) {
		sent := strings.TrimSpace(lower[start:end])
		if sent == "" {
			continue
		}
		// lower is normalised and lower-cased already, so splitText does not
		// copy it.
		st := splitText(sent, make([]span, 0, wordsOnStack))
		st.words = st.words[fillers(&st):]
		if sentenceStates(&st) {
			return true
		}
	}
	return false
}

// sentenceStates reports whether the sentence t, its fillers skipped, carries
// a trigger and tells rather than asks.
func sentenceStates(t *text) bool {
	s := t.lower
	hits := t.rules()
	if hits&ruleTrigger == 0 && !hasPhoneNumber(s) && !hasEmail(s) && !(t.cjk && hasMySlot(s)) {
		return false
	}
	if asksOpenly(t, hits) {
		return false
	}
	if !asksYesNo(t, hits) || hits&ruleNote != 0 {
		return true
	}
	rest, ok := cutTag(s)
	if !ok {
		return false
	}
	rt := splitText(rest, make([]span, 0, wordsOnStack))
	rt.words = rt.words[fillers(&rt):]
	rh := rt.rules()
	return !asksOpenly(&rt, rh) && !asksYesNo(&rt, rh)
}

func asksOpenly(t *text, hits rule) bool {
	return hits&ruleAsk != 0 || opensWithInterrogative(t)
}

func asksYesNo(t *text, hits rule) bool {
	return hits&ruleYesNo != 0 || endsWithQuestionMark(t.lower) || t.cjk && hasANotA(t.lower)
}

// sentenceEnd returns where the sentence starting at start ends: after a
// run of terminators, a full stop only before a space, "?" and "!" not
// inside a URL or a word ("?q=1", "Yahoo!Mail").
func sentenceEnd(s string, start int) int {
	for i := start; i < len(s); {
		c := s[i]
		size := 1
		end := false
		switch {
		case c == '\n':
			end = true
		case c == '.':
			end = i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' || s[i+1] == '\t'
		case c == '?' || c == '!':
			end = i+1 == len(s) || !isASCIIAlnum(s[i+1]) && strings.IndexByte("=&/_-", s[i+1]) < 0
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[i:])
			size = n
			end = r == '。' || r == '？' || r == '！' || r == '…'
		}
		i += size
		if end {
			return skipTerminators(s, i)
		}
	}
	return len(s)
}

func skipTerminators(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !strings.ContainsRune(".?!)\"'」』）。？！…", r) {
			break
		}
		i += n
	}
	return i
}

// fillers counts the words that open t without meaning: "ok so", "hey",
// "please", "sag mal". German adverbs such as "übrigens" are not fillers:
// they take the first place, so the verb after them is no question.
func fillers(t *text) int {
	n := 0
	for n < len(t.words) {
		w := t.word(n)
		if w == "sag" && n+1 < len(t.words) && t.word(n+1) == "mal" {
			n += 2
			continue
		}
		if !fillerWords[w] {
			break
		}
		n++
	}
	return n
}

// opensWithInterrogative reports a sentence that opens with a question word
// and reads as a question: "which fruit do I like", "welche Frucht mag ich",
// "jaký čaj mám rád", but not the clauses "when I travel, I ...", "was ich
// mag, ist ..." or "jak už víš, ...".
func opensWithInterrogative(t *text) bool {
	if len(t.words) == 0 {
		return false
	}
	w, next := t.word(0), ""
	if len(t.words) > 1 {
		next = t.word(1)
	}
	switch interrogatives[w] {
	case whContracted:
		return true
	case whOpen:
		return next != "" && !clauseOpeners[next]
	case whStrict:
		return auxiliaries[next]
	case whCzech:
		// Czech does not invert, so "kde bydlím" is a question and "kde
		// bydlím, tam ..." a clause; the comma tells them apart.
		if w == "co" && next == "se" && len(t.words) > 2 && (t.word(2) == "týče" || t.word(2) == "týká") {
			return false
		}
		return strings.IndexByte(t.lower, ',') < 0
	}
	return false
}

// endsWithQuestionMark reports "?" or "？" among the sentence's last
// punctuation and emoji.
func endsWithQuestionMark(s string) bool {
	for i := len(s); i > 0; {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		if isLetterOrDigit(r) {
			return false
		}
		if r == '?' || r == '？' {
			return true
		}
		i -= n
	}
	return false
}

// hasANotA finds the Chinese yes-no form "X不X": 喜不喜欢, 是不是, 能不能.
func hasANotA(s string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], "不")
		if j < 0 {
			return false
		}
		at := i + j
		i = at + len("不")
		before, _ := utf8.DecodeLastRuneInString(s[:at])
		after, _ := utf8.DecodeRuneInString(s[i:])
		if before == after && unicode.Is(unicode.Han, before) {
			return true
		}
	}
}

// cutTag returns the sentence without a final question tag, "I live in
// Prague" for "I live in Prague, right?", and whether it had one.
func cutTag(s string) (string, bool) {
	body := strings.TrimRightFunc(s, notLetterOrDigit)
	if i, n := lastComma(body); i >= 0 && isTag(strings.TrimSpace(body[i+n:])) {
		return body[:i], true
	}
	for _, tag := range suffixTags {
		if rest, ok := strings.CutSuffix(body, tag); ok && rest != "" {
			return rest, true
		}
	}
	return "", false
}

func lastComma(s string) (int, int) {
	for i := len(s); i > 0; {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		i -= n
		if r == ',' || r == '，' || r == '、' {
			return i, n
		}
	}
	return -1, 0
}

// isTag reports a question tag after a comma: "right", "oder", "že", or an
// English "isn't it", "don't I".
func isTag(tail string) bool {
	if tagPhrases[tail] {
		return true
	}
	aux, subject, ok := strings.Cut(tail, " ")
	return ok && negatedAuxiliaries[aux] && tagSubjects[subject]
}

type whKind uint8

const (
	whNone       whKind = iota
	whContracted        // "what's": a question whatever follows
	whOpen              // a question unless a subject or article follows: "which fruit" vs "what I like"
	whStrict            // a question only before an auxiliary: "when do" vs "when I travel"
	whCzech             // a question unless a comma shows a clause
)

var (
	interrogatives = buildInterrogatives()

	// clauseOpeners after a question word make it a clause, not a question.
	clauseOpeners = setOf(
		"i", "you", "we", "he", "she", "it", "they", "my", "your", "our", "his", "her", "their",
		"the", "a", "an", "this", "that", "these", "those", "me", "us", "him", "them", "to", "ever",
		"ich", "du", "er", "sie", "es", "wir", "ihr", "man", "mein", "meine", "meinen", "meinem", "meiner",
		"dein", "deine", "der", "die", "das", "den", "dem", "ein", "eine", "einen", "mir", "mich", "dir", "dich",
		"uns", "immer", "gesagt", "schon", "besprochen", "erwähnt", "gewohnt", "gewünscht", "vereinbart", "auch",
	)
	auxiliaries = setOf(
		"do", "does", "did", "is", "are", "am", "was", "were", "can", "could", "would", "will", "should",
		"shall", "may", "might", "must", "have", "has", "had", "don't", "doesn't", "didn't", "isn't",
		"aren't", "wasn't", "can't", "won't", "many", "much", "often", "long", "old", "far", "come", "big",
	)
	fillerWords = setOf(
		"ok", "okay", "so", "and", "but", "hey", "hi", "hello", "well", "um", "uh", "hmm", "oh", "please",
		"pls", "plz", "also", "btw", "now", "then", "quick", "question", "just", "sorry", "actually",
		"anyway", "wait", "a", "tak", "no", "hele", "prosím", "ahoj", "čau", "jo", "takže", "mimochodem",
		"und", "aber", "hallo", "bitte", "na", "ähm", "kurze", "frage",
	)

	// Question tags: after a comma, or for suffixTags at the very end.
	tagPhrases = setOf(
		"right", "correct", "yes", "yeah", "yep", "no", "ok", "okay", "true", "eh", "huh", "innit",
		"am i right", "is that right", "isn't that right", "you know", "remember", "don't you think",
		"že", "ne", "viď", "vid", "že jo", "jo", "nebo ne", "pravda", "správně", "ano", "že ano", "že ne",
		"nemám pravdu", "viďte", "no ne", "víš", "pamatuješ",
		"oder", "nicht", "nicht wahr", "gell", "gelle", "nä", "stimmt's", "stimmts", "stimmt", "richtig",
		"ja", "oder nicht", "weißt du", "weisst du", "wa",
	)
	negatedAuxiliaries = setOf(
		"isn't", "isnt", "aren't", "arent", "don't", "dont", "doesn't", "doesnt", "didn't", "didnt",
		"wasn't", "wasnt", "weren't", "haven't", "havent", "hasn't", "hasnt", "won't", "wouldn't",
		"can't", "cant", "couldn't", "shouldn't", "ain't",
	)
	tagSubjects = setOf("i", "you", "it", "we", "they", "he", "she", "that", "there")
	suffixTags  = []string{
		" right", " oder", " že", " gell",
		"对吧", "对不对", "是吧", "是不是", "没错吧", "对吗", "是吗", "没错吗", "对不", "吧",
		"よね", "ね", "でしょ", "でしょう", "だろ", "だろう", "じゃない", "じゃん", "よな",
		"맞죠", "맞지", "맞지요", "맞나요", "그렇죠", "그렇지", "그치", "죠", "지요", "지",
	}
)

func buildInterrogatives() map[string]whKind {
	m := map[string]whKind{}
	for _, w := range []string{
		"what's", "whats", "where's", "wheres", "who's", "whos", "how's", "hows", "when's", "why's",
		"what're", "who're", "where're", "what'd", "how'd", "where'd", "who'd", "whaddya",
	} {
		m[w] = whContracted
	}
	for _, w := range []string{
		"what", "which", "who", "whose", "whom",
		"was", "wer", "wen", "wem", "wessen", "wo", "wann", "wie", "warum", "weshalb", "wieso", "weswegen",
		"welche", "welcher", "welches", "welchen", "welchem", "woher", "wohin", "womit", "wofür", "worüber",
		"worauf", "wovon", "woran", "wieviel", "wieviele",
	} {
		m[w] = whOpen
	}
	for _, w := range []string{"when", "where", "why", "how"} {
		m[w] = whStrict
	}
	for _, w := range []string{
		"co", "kdo", "koho", "komu", "kým", "kde", "kdy", "proč", "jak", "kolik", "čí", "kam", "odkud",
		"jestli", "zda", "zdali", "copak", "kdepak", "jakpak",
		"jaký", "jaká", "jaké", "jakou", "jakého", "jakém", "jakým", "jakých", "jakými", "jakému",
		"který", "která", "které", "kterou", "kterého", "kterém", "kterým", "kterých", "kterými", "kterému",
	} {
		m[w] = whCzech
	}
	return m
}

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
