package redact

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PINs, door and alarm codes, lock combinations: what a code is read as,
// the things codes open, and the codes read from the words before them.

// codeNounAnchor: "code", "combo" and their translations, which name a
// PIN when a door, gate, alarm or safe is named next to them ("the alarm
// panel master code is …", "Code für das Garagentor: …").
var codeNounAnchor = anchor(true, "code", "kód", "kod", "código", "codigo", "combo", "combination", "kombination", "combinación",
	"combinacion", "kombinace")

// deviceWords are the things a code opens: whole words (a plural "s"
// allowed), or with "*" the start of a word ("Garagentor", "dveří").
// "locker" is not a lock: a gym locker's code is no secret.
var deviceWords = []string{"door", "gate", "garage*", "alarm*", "safe", "keypad*", "lock", "entry", "building", "tür*", "haustür*",
	"tor", "tresor*", "schloss", "porte", "portail", "coffre*", "digicode", "entrée", "puerta*", "portal", "caja fuerte", "candado",
	"dveř*", "dver*", "brán*", "bran*", "trezor*", "zámek", "zamek", "vchod*", "padlock", "lockbox", "cadenas", "key safe",
	"card", "bank card", "karte", "carte", "tarjeta", "karta", "karty", "银行卡", "卡", "カード", "카드",
	"保险箱", "保险柜", "门禁", "大门", "金庫", "金库", "玄関", "ドア", "금고", "현관", "도어락", "대문",
	"fahrradschloss", "zahlenschloss", "vorhängeschloss", "bike lock", "bici", "garáž*", "sklep*", "keller*", "cellar", "报警器", "警報",
	// A till's and a card terminal's codes.
	"cash register", "register", "till", "kasse", "caisse", "pokladn*", "レジ", "收银", "pos", "terminal", "tpe", "自転車", "鍵", "錠", "ロック", "자물쇠", "锁",
	// What a screen lock's PIN opens.
	"phone", "handy*", "ipad*", "iphone*", "tablet*", "telefon*", "mobil*", "スマホ", "携帯", "手机", "핸드폰", "휴대폰"}

// nearDevice: a device word is a word of s.
func nearDevice(s string) bool {
	for _, w := range deviceWords {
		prefix := strings.HasSuffix(w, "*")
		w = strings.TrimSuffix(w, "*")
		for at := 0; ; {
			k := strings.Index(s[at:], w)
			if k < 0 {
				break
			}
			start, end := at+k, at+k+len(w)
			if end < len(s) && s[end] == 's' {
				end++
			}
			if (start == 0 || !isASCIILetter(s[start-1])) && (prefix || end == len(s) || !isASCIILetter(s[end])) {
				return true
			}
			at = start + 1
		}
	}
	return false
}

func findCodes(in *input, out []candidate) []candidate {
	text, lower := in.text, in.lower
	for _, i := range in.hits[codeNounAnchor] {
		// The word, read no further than the longest code noun.
		word := lower[i:min(len(lower), i+16)]
		w := strings.IndexFunc(word, func(r rune) bool { return !unicode.IsLetter(r) })
		if w < 0 {
			continue // a longer word: "codebase", "codeword…"
		}
		end := i + w
		if i > 0 && isASCIIWordByte(text[i-1]) || end < len(text) && (text[end] == '_' || text[end] >= '0' && text[end] <= '9') {
			continue
		}
		if _, read := slices.BinarySearch(in.codeKeywordEnds, end); read {
			continue // "door code": findContext has read it
		}
		sep := afterKeywordRE.FindStringIndex(lower[end:min(len(lower), end+160)])
		var around string
		if sep != nil {
			around = lower[max(0, i-32) : end+sep[1]]
		} else {
			around = lower[max(0, i-32):end]
		}
		if !nearDevice(around) {
			continue
		}
		if sep == nil {
			if strings.HasPrefix(text[end:], " ") {
				if s, e, _ := valueAt(text, end+1); s < e && pinValue(text[s:e], true) {
					out = append(out, candidate{Finding{"password", s, e}, rankContext})
				}
			}
			continue
		}
		// A bare "code" is weaker evidence than "door code": its value
		// must end the clause ("the safe code is 2000 lines" is a count).
		if s, e, _ := valueAt(text, end+sep[1]); s < e && pinValue(text[s:e], false) && (symbolPIN(text[s:e]) || clauseEnds(text[e:])) {
			out = append(out, candidate{Finding{"password", s, e}, rankContext})
		}
	}
	return out
}

// pinValue: 4 to 12 digits, perhaps ending in the "#" or "*" a keypad
// takes ("1357#"), or a short code of digits and capitals ("4B27"). With
// no separator before it (loose) only the digits count.
func pinValue(v string, loose bool) bool {
	d := strings.TrimRight(v, "#*")
	if len(d) >= 4 && len(d) <= 12 && strings.Trim(d, "0123456789") == "" {
		return true
	}
	if combination(v) {
		return true
	}
	if loose || len(v) < 4 || len(v) > 8 {
		return false
	}
	digits := 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c < 'A' || c > 'Z':
			return false
		}
	}
	return digits >= 3
}

// combination: a lock's numbers, three or more groups of one or two
// digits ("24-11-37").
func combination(v string) bool {
	groups := strings.Split(v, "-")
	if len(groups) < 3 || len(groups) > 6 {
		return false
	}
	for _, g := range groups {
		if len(g) < 1 || len(g) > 2 || strings.Trim(g, "0123456789") != "" {
			return false
		}
	}
	return true
}

// symbolPIN: digits ending in a keypad's "#" or "*", which no count or
// year has ("2580#").
func symbolPIN(v string) bool {
	d := strings.TrimRight(v, "#*")
	return len(d) >= 4 && len(d) <= 12 && len(d) < len(v) && strings.Trim(d, "0123456789") == ""
}

// findSpacedCodes finds codes read from the clause before them: after a
// password or code keyword, a code noun or a device ("Zahlenschloss am
// Kellerabteil: 3-9-1-6", "금고 비번 알려줄게 2-7-1-9-0-4", "garage keypad:
// 7 3 1 9 then enter"), digits in three or more groups of one or two
// joined by dashes, or four or more single digits apart, which no count,
// date or phone number is written as; or digits ending in a keypad's "#".
// After a code keyword, or a device whose clause sets or opens it, a
// number of four to eight digits that ends its clause counts too ("Der
// Türcode fürs Büro ist ab Montag 2580, bitte ..."), unless it reads as a
// year. The numbers are looked at first: they are rarer than the words.
func findSpacedCodes(in *input, out []candidate) []candidate {
	text, lower := in.text, in.lower
	for p := 0; p < len(text); p++ {
		if !isDigit(text[p]) || p > 0 && (isASCIIWordByte(text[p-1]) || text[p-1] == '-' || text[p-1] == '.' || text[p-1] == ':') {
			continue
		}
		e, digits, groups := digitGroups(text, p)
		spaced := len(groups) >= 3 && digits >= 4 && digits <= 8 && maxOf(groups) <= 2 && (strings.Contains(text[p:e], "-") || maxOf(groups) == 1)
		keypad := len(groups) == 1 && digits >= 4 && digits <= 12 && hasKeypadMark(text[e:])
		plain := len(groups) == 1 && digits >= 4 && digits <= 8 && !year(text[p:e]) && codeEnds(text[e:]) && !timeWordBefore(lower, p)
		if !spaced && !keypad && !plain {
			p = e
			continue
		}
		from := clauseStart(text, p, clauseSpan)
		window := lower[from:p]
		if notCodeBefore(lower, from, p) {
			p = e
			continue // "code postal 13001", "下4桁は 3317"
		}
		password, code := keywordIn(in, from, p)
		device := nearDevice(window)
		if spaced || keypad {
			if password || code || device {
				end := e
				if keypad {
					end = keypadEnd(text, e)
				}
				out = append(out, candidate{Finding{"password", p, end}, rankContext})
			}
		} else if code || device && devicePlain(lower[from:clauseEnd(lower, p, clauseSpan)]) {
			out = append(out, candidate{Finding{"password", p, e}, rankContext})
		}
		p = e
	}
	return out
}

// notCodeWords, among the two words before a number, make it another
// number: a postal code, the last digits of a card, a room, an order, a
// phone.
var notCodeWords = []string{"postal", "postcode", "zip", "plz", "psč", "邮编", "郵便", "우편", "last 4", "last four", "ending in", "endet auf",
	"下4桁", "末尾", "끝자리", "尾号", "končí", "room", "zimmer", "pokoj", "order", "bestell", "objednáv", "invoice", "rechnung", "faktur",
	"flight", "flug", "tel.", "tel:", "phone", "telefon", "id", "nr", "trace"}

// notCodeBefore: a word among the two before p (no further back than
// from) starts with one of notCodeWords ("Hinterzimmer" is no room).
func notCodeBefore(lower string, from, p int) bool {
	b, words := p, 0
	for b > from && words < 3 {
		b--
		if lower[b] == ' ' && b+1 < p && lower[b+1] != ' ' {
			words++
		}
	}
	for _, w := range strings.FieldsFunc(lower[b:p], func(r rune) bool { return r == ' ' || r == ',' || r == '(' }) {
		for _, n := range notCodeWords {
			if strings.HasPrefix(w, n) || n[0] >= utf8.RuneSelf && strings.Contains(w, n) || strings.HasSuffix(w, "-"+n) {
				return true
			}
		}
	}
	return false
}

// keywordIn reports a password keyword and a code keyword (PINs, door
// codes) among the keywords found in [from, to).
func keywordIn(in *input, from, to int) (password, code bool) {
	for _, i := range hitsIn(in.hits[keywordAnchor], from, to) {
		kw := keywordAt(in.lower[i:])
		if kw == "" || len(kw) <= 4 && i > 0 && isASCIILetter(in.text[i-1]) {
			continue
		}
		switch classOf(kw) {
		case classPassword:
			password = true
		case classCode:
			code = true
		}
	}
	return password, code
}

// clauseStart is where the clause ending at p starts, at most span bytes
// before it.
func clauseStart(text string, p, span int) int {
	from := max(0, p-span)
	for j := p - 1; j >= from; j-- {
		switch c := text[j]; {
		case c == '\n':
			return j + 1
		case c == ' ' && j > 0 && strings.IndexByte(".!?", text[j-1]) >= 0:
			return j + 1
		case j >= 2 && (text[j-2:j+1] == "。" || text[j-2:j+1] == "！" || text[j-2:j+1] == "？"):
			return j + 1
		}
	}
	// Not inside a multi-byte character.
	for from < p && !utf8.RuneStart(text[from]) {
		from++
	}
	return from
}

func maxOf(xs []int) int { return slices.Max(xs) }

// hasKeypadMark: a keypad's "#" or "*" (or their full-width forms)
// right after the digits.
func hasKeypadMark(rest string) bool {
	return strings.HasPrefix(rest, "#") || strings.HasPrefix(rest, "*") || strings.HasPrefix(rest, "＃") || strings.HasPrefix(rest, "＊")
}

func keypadEnd(text string, e int) int {
	_, size := utf8.DecodeRuneInString(text[e:])
	return e + size
}

// codeEnds: what follows a code ends its clause, or is a particle of a
// CJK script ("4093、", "527139 に設定した") or the verb's particle of a
// German or Czech sentence ("geht mit 196403 auf").
func codeEnds(after string) bool {
	if clauseEnds(after) {
		return true
	}
	a := strings.TrimLeft(after, " ")
	if strings.HasPrefix(a, "(") {
		return true // "code: 7730 (don't give it to …)"
	}
	if r, _ := utf8.DecodeRuneInString(a); r >= 0x3000 {
		return true
	}
	w, _, _ := strings.Cut(a, " ")
	switch strings.TrimRight(strings.ToLower(w), ",.") {
	case "auf", "zu", "ein", "an":
		return true
	}
	return false
}

// devicePlain: the clause after a device sets, opens or numbers it, so a
// plain number in it is its code.
func devicePlain(clause string) bool { return containsAny(clause, settingWords) }

var settingWords = []string{"set it to", "set to", "opens with", "open with", "code", "combo", "kombi", "geht mit", "öffnet mit", "nastavil",
	"nastavila", "otevře", "otevřeš", "kombinac", "kód", "番号", "暗証", "設定", "密码", "번호", "비번", "비밀번호", "コード", "코드", "代码", "码",
	": ", "："}

// year: a number that reads as a year (1950 to 2049).
func year(v string) bool { return len(v) == 4 && (v >= "1950" && v <= "2049") }

// timeWordBefore: "in 4417", "seit 2580": a number after a word of time
// or quantity is no code.
func timeWordBefore(lower string, p int) bool {
	switch lastWordBefore(lower, p) {
	case "in", "since", "until", "seit", "bis", "im", "od", "do", "v", "depuis", "desde", "hasta", "about", "over", "under", "than", "from", "between":
		return true
	}
	return false
}
