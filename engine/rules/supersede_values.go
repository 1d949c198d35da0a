package rules

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Value parsers and comparison for the slot rules (supersede.go): what a
// slot's value is, in each language, and when two values are the same.

// placeValue checks where someone lives or works or what they drive: a
// name, not a description ("a small flat", "my new place", "home").
func placeValue(lang slotLang, raw string) (string, bool) {
	v, kind, ok := cleanSlotValue(lang, raw)
	if !ok || kind == valueNoun || vagueValues[lang][v] {
		return "", false
	}
	for _, p := range vaguePrefixes[lang] {
		if strings.HasPrefix(v, p) {
			return "", false
		}
	}
	return v, true
}

// isHomeValue rejects what "based in" or "we moved to" also name: an office
// ("the Berlin office") or a tool a team moved to ("Postgres").
func isHomeValue(lang slotLang, _, v string) bool {
	words := strings.Fields(v)
	return len(words) > 0 && !notHomeHeads[lang][words[len(words)-1]] &&
		!slices.ContainsFunc(words, func(w string) bool { return notPlaces[lang][w] })
}

// isNamedEmployer accepts a company's name only: capitalised words without
// an article ("I joined Accenture", "Ich bin bei Aldi"), not a time ("I
// started at 9am"), a club, a social network or, in German, a person one
// stays with ("bei Oma").
func isNamedEmployer(lang slotLang, raw, v string) bool {
	words := strings.Fields(raw)
	if len(words) == 0 || !capitalisedWords(words) {
		return false
	}
	if first, _ := utf8.DecodeRuneInString(words[0]); !unicode.IsUpper(first) || articles[lang][lowerText(words[0])] {
		return false
	}
	return !slices.ContainsFunc(strings.Fields(v), func(w string) bool {
		return notEmployers[lang][w] || lang == langGerman && relations[lang][w] != ""
	})
}

// capitalisedWords reports whether every word that starts with a letter
// starts with a capital: "Deutsche Bahn", "Škodou Octavia RS", "BMW X5".
func capitalisedWords(words []string) bool {
	for _, w := range words {
		r, _ := utf8.DecodeRuneInString(w)
		if unicode.IsLetter(r) && !unicode.IsUpper(r) {
			return false
		}
	}
	return true
}

// isCarValue checks what the looser car forms name: a Czech "jezdím X" or
// "mám auto X" a capitalised make ("Toyotou Yaris", not "autem" or "MHD"),
// a Chinese 我开X a known make (not 我开会), a Japanese Xに乗っています a
// katakana or Latin name that is no bus or bike, a Korean X를 타요 nothing
// else one 타다 (버스, 스키, 커피).
func isCarValue(lang slotLang, raw, v string) bool {
	switch lang {
	case langCzech:
		words := strings.Fields(v)
		return len(words) > 0 && capitalisedWords(strings.Fields(raw)) && !notCars[lang][words[0]]
	case langChinese:
		return chineseCar(v)
	case langJapanese:
		return !notCars[lang][v] && strings.IndexFunc(v, func(r rune) bool {
			return !unicode.In(r, unicode.Katakana, unicode.Latin, unicode.Digit) && !strings.ContainsRune("ー・ -", r)
		}) < 0
	case langKorean:
		return !notCars[lang][v]
	}
	return true
}

// chineseCar reports a value that starts with a car make and adds no
// direction: 丰田卡罗拉, 特斯拉Model 3, not 特斯拉去上班.
func chineseCar(v string) bool {
	for _, brand := range chineseCarMakes {
		if rest, ok := strings.CutPrefix(v, brand); ok {
			return !strings.ContainsAny(rest, "去来到回的")
		}
	}
	return false
}

// stripHonorific drops the honorific after a person's name: 佐藤さん,
// 김민수 씨.
func stripHonorific(lang slotLang, v string) string {
	v = strings.TrimSpace(v)
	for _, h := range honorifics[lang] {
		if rest, ok := strings.CutSuffix(v, h); ok && rest != "" {
			return strings.TrimSpace(rest)
		}
	}
	return v
}

// Ages.

func parseAge(lang slotLang, raw string) (string, bool) {
	s := lowerText(strings.TrimSpace(raw))
	n, err := strconv.Atoi(s)
	ok := err == nil
	if !ok {
		switch lang {
		case langEnglish, langCzech:
			n, ok = parseSpacedNumber(lang, s)
		case langGerman:
			n, ok = parseGermanNumber(s)
		case langChinese, langJapanese:
			n, ok = parseHanNumber(s)
		case langKorean:
			n, ok = parseKoreanNumber(s)
		}
	}
	if !ok || n <= 0 || n > maxAge {
		return "", false
	}
	return strconv.Itoa(n), true
}

// parseSpacedNumber reads "six", "thirty-four", "třicet čtyři".
func parseSpacedNumber(lang slotLang, s string) (int, bool) {
	units, tens := numberUnits[lang], numberTens[lang]
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '-' })
	switch len(parts) {
	case 1:
		if n, ok := units[parts[0]]; ok {
			return n, true
		}
		n, ok := tens[parts[0]]
		return n, ok
	case 2:
		t, ok1 := tens[parts[0]]
		u, ok2 := units[parts[1]]
		return t + u, ok1 && ok2 && u < 10
	}
	return 0, false
}

// parseGermanNumber reads "sechs", "zwanzig", "vierunddreißig".
func parseGermanNumber(s string) (int, bool) {
	units, tens := numberUnits[langGerman], numberTens[langGerman]
	if n, ok := units[s]; ok {
		return n, true
	}
	if n, ok := tens[s]; ok {
		return n, true
	}
	u, t, ok := strings.Cut(s, "und")
	if !ok {
		return 0, false
	}
	if u == "ein" {
		u = "eins"
	}
	un, ok1 := units[u]
	tn, ok2 := tens[t]
	return un + tn, ok1 && ok2 && un < 10
}

// parseHanNumber reads 六, 十二, 三十四, 两.
func parseHanNumber(s string) (int, bool) {
	digit := func(r string) (int, bool) {
		if r == "两" {
			return 2, true
		}
		n := strings.Index("一二三四五六七八九", r)
		if n < 0 || utf8.RuneCountInString(r) != 1 {
			return 0, false
		}
		return n/len("一") + 1, true
	}
	before, after, found := strings.Cut(s, "十")
	if !found {
		return digit(s)
	}
	t, u := 1, 0
	var ok bool
	if before != "" {
		if t, ok = digit(before); !ok {
			return 0, false
		}
	}
	if after != "" {
		if u, ok = digit(after); !ok {
			return 0, false
		}
	}
	return t*10 + u, true
}

// parseKoreanNumber reads native Korean numbers as used with 살: 여섯, 열한,
// 스무.
func parseKoreanNumber(s string) (int, bool) {
	if n, ok := koreanUnits[s]; ok {
		return n, true
	}
	for tens, n := range koreanTens {
		rest, ok := strings.CutPrefix(s, tens)
		if !ok {
			continue
		}
		if rest == "" {
			return n, true
		}
		if u, ok := koreanUnits[rest]; ok {
			return n + u, true
		}
	}
	return 0, false
}

// Favourites, preferences and "my X is Y".

func favouriteKey(lang slotLang, raw string) (string, bool) {
	topic := strings.Join(strings.Fields(lowerText(raw)), " ")
	if topic == "" || utf8.RuneCountInString(topic) > maxKeyRunes || strings.ContainsAny(topic, badValueChars) {
		return "", false
	}
	if lang == langEnglish {
		topic = britishSpelling.Replace(topic)
	}
	if c, ok := favouriteTopics[lang][topic]; ok {
		topic = c
	}
	return "favourite " + topic, true
}

// preferenceSlot keys a preference by its context, "in the morning" or
// 早上, which may come before or after the value but not both.
func preferenceSlot(lang slotLang, val, ctx, ctx2 string) (string, string, bool) {
	if ctx != "" && ctx2 != "" {
		return "", "", false
	}
	c, ok := cleanContext(lang, ctx+ctx2)
	if !ok {
		return "", "", false
	}
	v, _, ok := cleanSlotValue(lang, val)
	return preferenceKey + c, v, ok
}

// cleanContext normalises a preference's context: lower case, without
// articles and possessives ("in the morning" is "in morning").
func cleanContext(lang slotLang, raw string) (string, bool) {
	c := strings.TrimSpace(lowerText(raw))
	if c == "" {
		return "", true
	}
	if strings.ContainsAny(c, badValueChars) || utf8.RuneCountInString(c) > maxValueRunes {
		return "", false
	}
	if !lang.latin() {
		if lang == langChinese {
			c = trimChineseContext(c)
		}
		v, ok := cjkValue(lang, c)
		return v, ok && v != ""
	}
	var kept []string
	for i, w := range strings.Fields(c) {
		switch {
		case contextDeterminers[w]:
		case i > 0 && valueStops[lang][w]:
			return "", false
		default:
			kept = append(kept, w)
		}
	}
	return strings.Join(kept, " "), len(kept) > 0 && len(kept) <= maxValueWords
}

// trimChineseContext drops the frame of 在编辑器里 or 开会的时候; 早上 keeps its
// 上, which only 在 marks as "on".
func trimChineseContext(c string) string {
	suffixes := []string{"的时候", "时"}
	if rest, ok := strings.CutPrefix(c, "在"); ok {
		c, suffixes = rest, append(suffixes, "里", "上", "中")
	}
	for _, s := range suffixes {
		if rest, ok := strings.CutSuffix(c, s); ok && rest != "" {
			return rest
		}
	}
	return c
}

// genericSlot reads "my X is Y". Y must be an alternative to other values
// of X: a phone number for "phone", a name for "manager", and lower-case
// words only for attributes such as "name" or "timezone" ("my manager is
// strict" says nothing about who the manager is).
func genericSlot(lang slotLang, rawKey, rawVal string) (string, string, valueKind, bool) {
	key, ok := genericKey(lang, rawKey)
	if !ok {
		return "", "", valueAny, false
	}
	switch key {
	case "manager":
		rawVal = stripHonorific(lang, rawVal)
	case "phone":
		v, ok := phoneValue(rawVal)
		return key, v, valueIdent, ok
	case "email":
		v, ok := emailValue(rawVal)
		return key, v, valueIdent, ok
	}
	v, kind, ok := cleanSlotValue(lang, rawVal)
	if !ok {
		return "", "", valueAny, false
	}
	if !lang.latin() {
		return key, v, valueAny, cjkGenericValue(lang, v)
	}
	switch key {
	case "manager", "employer":
		ok = kind == valueName
	case "car":
		ok = kind == valueName || kind == valueNoun
	default:
		if bareKeys[key] {
			return key, v, valueAny, true
		}
		ok = kind != valueBare
	}
	return key, v, kind, ok
}

func genericKey(lang slotLang, raw string) (string, bool) {
	k := strings.Join(strings.Fields(lowerText(raw)), " ")
	if k == "" || utf8.RuneCountInString(k) > maxKeyRunes {
		return "", false
	}
	if c, ok := genericKeys[lang][k]; ok {
		return c, true
	}
	if blockedKeys[k] || isRelationKey(lang, k) {
		return "", false
	}
	if lang == langEnglish {
		k = britishSpelling.Replace(k)
	}
	return k, true
}

// isRelationKey reports "my sister is Anna": a relative or pet can be one of
// several, so a second one is no replacement.
func isRelationKey(lang slotLang, k string) bool {
	if lang.latin() {
		first, _, _ := strings.Cut(k, " ")
		return relations[lang][first] != "" || relations[lang][k] != ""
	}
	if lang == langKorean {
		return slices.ContainsFunc(strings.Fields(k), func(w string) bool { return relations[lang][w] != "" })
	}
	for rel := range relations[lang] {
		if strings.Contains(k, rel) {
			return true
		}
	}
	return false
}

// cjkGenericValue rejects descriptions: 一个好人, 優しい人 (hiragana marks an
// adjective or a clause), or Korean with more than one word.
func cjkGenericValue(lang slotLang, v string) bool {
	switch lang {
	case langChinese:
		for _, s := range []string{"一个", "一位", "一家", "很", "非常", "挺", "特别", "有点", "太", "的"} {
			if strings.Contains(v, s) {
				return false
			}
		}
	case langJapanese:
		return strings.IndexFunc(v, func(r rune) bool { return unicode.Is(unicode.Hiragana, r) }) < 0
	case langKorean:
		return !strings.Contains(v, " ")
	}
	return true
}

// phoneValue keeps a phone number's digits and leading "+".
func phoneValue(raw string) (string, bool) {
	s := strings.TrimSpace(raw)
	var b strings.Builder
	digits := 0
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
			digits++
		case r == '+' && i == 0:
			b.WriteRune(r)
		case strings.ContainsRune(" -()./", r):
		default:
			return "", false
		}
	}
	return b.String(), digits >= minPhoneDigits
}

func emailValue(raw string) (string, bool) {
	v := strings.Trim(lowerText(raw), " .")
	local, domain, ok := strings.Cut(v, "@")
	return v, ok && local != "" && domain != "" && !strings.ContainsAny(v, " ,;()<>\"") && !strings.Contains(domain, "@")
}

// Comparing values.

// sameSlotValue reports values that are the same or one contains the
// other: "Paris" and "Paris France", 北京 and 北京市, and in Czech the
// declined forms "v Praze" and "do Prahy".
func sameSlotValue(a, b slotFact) bool {
	x, y := a.Value, b.Value
	switch {
	case x == y:
		return true
	case a.Key == "age", a.Key == "email":
		return false
	case a.Key == "phone":
		dx, dy := strings.TrimPrefix(x, "+"), strings.TrimPrefix(y, "+")
		return strings.HasSuffix(dx, dy) || strings.HasSuffix(dy, dx)
	case !a.lang.latin():
		return strings.Contains(x, y) || strings.Contains(y, x)
	}
	wx, wy := valueWords(x), valueWords(y)
	if containsRun(wx, wy) || containsRun(wy, wx) {
		return true
	}
	return a.lang == langCzech && sameStems(wx, wy)
}

func valueWords(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return !isLetterOrDigit(r) })
}

// containsRun reports whether b occurs in a as consecutive words.
func containsRun(a, b []string) bool {
	if len(b) == 0 || len(b) > len(a) {
		return false
	}
	for i := 0; i+len(b) <= len(a); i++ {
		if slices.Equal(a[i:i+len(b)], b) {
			return true
		}
	}
	return false
}

func sameStems(a, b []string) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for i := range a {
		if !sameCzechStem(a[i], b[i]) {
			return false
		}
	}
	return true
}

// sameCzechStem compares two Czech word forms that differ only in their
// last two letters or fewer: Praha, Prahy, Praze; Berlín, Berlíně.
func sameCzechStem(a, b string) bool {
	ra, rb := []rune(a), []rune(b)
	p := 0
	for p < len(ra) && p < len(rb) && ra[p] == rb[p] {
		p++
	}
	return p >= 3 && p >= len(ra)-2 && p >= len(rb)-2
}

// sameDomain reports preferences that are alternatives: two drinks, or two
// things of one kind ("dark mode", "light mode"). "Tea" and "dark mode" are
// two preferences, not one replacing the other.
func sameDomain(lang slotLang, a, b string) bool {
	ca, cb := valueClass(lang, a), valueClass(lang, b)
	if ca != "" || cb != "" {
		return ca == cb
	}
	switch lang {
	case langChinese, langJapanese:
		return sharedSuffix(a, b)
	}
	wa, wb := strings.Fields(a), strings.Fields(b)
	ha, hb := wa[len(wa)-1], wb[len(wb)-1]
	return ha == hb || lang == langCzech && sameCzechStem(ha, hb)
}

func valueClass(lang slotLang, v string) string {
	if !lang.latin() {
		for _, c := range cjkClasses[lang] {
			if lang == langKorean && v == c.word || lang != langKorean && strings.Contains(v, c.word) {
				return c.class
			}
		}
		return ""
	}
	for _, w := range strings.Fields(v) {
		for _, c := range latinClasses[lang] {
			if w == c.word || lang == langCzech && strings.HasPrefix(w, c.word) ||
				lang == langGerman && c.suffix && strings.HasSuffix(w, c.word) {
				return c.class
			}
		}
	}
	return ""
}

// sharedSuffix reports a common Chinese or Japanese head: 绿茶 and 红茶 share
// 茶, ダークモード and ライトモード share モード.
func sharedSuffix(a, b string) bool {
	ra, rb := []rune(a), []rune(b)
	n := 0
	for n < len(ra) && n < len(rb) && ra[len(ra)-1-n] == rb[len(rb)-1-n] {
		n++
	}
	if n == 0 {
		return false
	}
	return unicode.Is(unicode.Han, ra[len(ra)-1]) || n >= 2
}
