package redact

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Secrets announced in words: "the db password is hunter2", "API_KEY=…",
// "Passwort ist …", "mot de passe : …", "la contraseña es …", "密码是…",
// "パスワードは…", "비밀번호는 …", "heslo je …". A keyword, at most a
// short prepositional phrase ("for the staging server", "für den Server",
// "do databáze"), a separator (is / : / = and their translations), then
// the value, which must look like a credential (passwordValue, keyValue).
//
// Password keywords take any plausible value; key keywords (token, secret,
// API key) ask for letters and digits, since "the secret is to cache" and
// "max_token: 4096" are not credentials.
// The keywords, lower-cased, each spelling listed: they are looked up as
// literals (anchor), so a text full of "API" costs string compares, not
// regular-expression runs.
var (
	passwordKeywords = slices.Concat([]string{"password", "passwort", "passwd", "passphrase", "passcode", "pass", "pwd", "pw", "pin",
		"secret word", "code word", "codeword", "safeword", "psk", "wpa_psk", "clé wifi", "clé wi-fi", "clé du wifi", "cle wifi",
		"clave wifi", "clave del wifi", "clave wi-fi", "wifi code", "wi-fi code", "wlan code", "code wifi", "code du wifi", "code wi-fi", "code du wi-fi",
		"pin code", "pin-code", "pincode", "pin kód", "pin number", "kennwort", "mot de passe", "mdp", "contraseña", "contrasena", "clave",
		"heslo", "hesla", "heslem", "heslu", "heslová fráze", "heslovou frázi", "wachtwoord", "パスフレーズ", "비밀 문구", "암호 문구", "암호문",
		"핀 번호", "핀번호", "핀 코드", "핀으로", "핀은", "핀이",
		// Its common misspellings.
		"pasword", "passwrod", "passowrd", "paswort", "passwrd", "密码", "密碼", "口令", "パスワード", "パス", "暗証番号", "비밀번호", "비번", "패스워드", "암호"},
		// A Wi-Fi network's key is its password.
		spellings([]string{"wifi", "wi-fi", "wlan", "wpa", "wpa2", "wpa3", "network", "wireless"}, []string{"key", "schlüssel"}),
		codeKeywords)
	// codeKeywords name the number that opens a door, a gate or an alarm:
	// their value is a PIN ("4417", "1357#", "4B27").
	codeKeywords = slices.Concat(
		spellings([]string{"door", "alarm", "gate", "keypad", "access", "entry", "garage", "security", "alarm system", "unlock", "lockbox"},
			[]string{"code", "pin"}),
		// "safe code" and "lock code" also mean something else; their
		// codes are found by findCodes, which asks more of the value.
		spellings([]string{"lock", "safe"}, []string{"combo", "combination"}),
		[]string{"keypad", "türcode", "tür-code", "haustürcode", "alarmcode", "alarm-code", "zugangscode", "torcode", "tresorcode", "code de la porte",
			"code porte", "code d'accès", "code d'acces", "code de l'alarme", "code alarme", "code d'entrée", "code d'entree", "digicode",
			"código de la alarma", "código de alarma", "código de acceso", "código del portal", "código de la puerta", "codigo de la alarma",
			"codigo de acceso", "codigo del portal", "kód od dveří", "kód ke dveřím", "kód k alarmu", "kód alarmu", "přístupový kód",
			"pristupovy kod", "kod od dveri", "门禁码", "门禁密码", "開錠コード", "暗証コード", "도어락 비밀번호", "현관 비밀번호",
			"解除コード", "ロック解除", "解锁码", "解除码", "해제 코드", "puk", "puk code", "puk-code", "puk码", "pukコード", "puk 코드", "해제 번호", "잠금 해제", "도어락 번호", "현관 번호"})
	keyKeywords = slices.Concat(
		spellings([]string{"api"}, []string{"key", "token", "secret"}),
		spellings([]string{"access"}, []string{"key", "token"}),
		spellings([]string{"auth", "secret", "private"}, []string{"token"}),
		// A wallet's or a signing key's private key given as a value;
		// a PEM block is findPEM's, a path is no value.
		spellings([]string{"private"}, []string{"key"}),
		spellings([]string{"secret", "account", "shared access", "shared_access", "sharedaccess", "master", "signing", "encryption", "app",
			"application", "consumer", "license", "licence"}, []string{"key"}),
		spellings([]string{"client"}, []string{"secret"}),
		[]string{"accountkey", "sharedaccesskey", "wif"},
		[]string{"secret", "token", "api-schlüssel", "api schlüssel", "apischlüssel", "api-schluessel", "clé d'api", "clé de l'api",
			"clé api", "cle d'api", "cle api", "clé secrète", "cle secrete", "clé secrete", "jeton", "jeton d'accès", "jeton d'acces",
			"clave de api", "clave de la api", "clave api", "clave de acceso", "clave acceso", "clave secreta", "api klíč", "api-klíč",
			"apiklíč", "api klic", "tajný klíč", "tajny klic", "přístupový token", "pristupovy token", "api密钥", "api 密钥", "密钥", "秘钥",
			"令牌", "apiキー", "api キー", "アクセストークン", "トークン", "シークレット", "api키", "api 키", "액세스토큰", "액세스 토큰", "토큰",
			"시크릿키", "시크릿 키"},
		bareKeyKeywords)
	// bareKeyKeywords say "key" and nothing more: "the key is …" may give
	// a door key's place or a design's secret, so they take only a value
	// shaped like a generated key (randomKeyValue).
	bareKeyKeywords = []string{"key", "schlüssel", "schluessel", "clé", "cle", "klíč", "klic", "キー", "키"}
)

// spellings joins each first word to each second with a space, "_", "-"
// or nothing: "api key", "api_key", "api-key", "apikey".
func spellings(firsts, seconds []string) []string {
	var out []string
	for _, f := range firsts {
		for _, sec := range seconds {
			for _, sep := range []string{" ", "_", "-", ""} {
				out = append(out, f+sep+sec)
			}
		}
	}
	return out
}

// isPasswordKeyword tells the two kinds of keyword apart.
var isPasswordKeyword, isCodeKeyword, isBareKeyKeyword = set(passwordKeywords), set(codeKeywords), set(bareKeyKeywords)

func set(words []string) map[string]bool {
	m := map[string]bool{}
	for _, k := range words {
		m[k] = true
	}
	return m
}

// keywordsByByte lists the keywords under their first byte, longest first,
// so the longest one at a place is found first.
var keywordsByByte = func() (t [256][]string) {
	for _, k := range slices.Concat(passwordKeywords, keyKeywords) {
		t[k[0]] = append(t[k[0]], k)
	}
	for i := range t {
		slices.SortStableFunc(t[i], func(a, b string) int { return len(b) - len(a) })
	}
	return t
}()

// keywordAt returns the longest keyword lower starts with.
func keywordAt(lower string) string {
	if lower == "" {
		return ""
	}
	for _, k := range keywordsByByte[lower[0]] {
		if strings.HasPrefix(lower, k) {
			return k
		}
	}
	return ""
}

const (
	// filler is a short phrase between keyword and separator, opened by a
	// preposition: "password for the staging box is".
	filler = `(?:\s+(?:for|of|to|on|at|in|from|f[üu]r|f[üu]rs|zum|zur|vom|von|beim|pour|de|du|des|para|del|k|ke|do|na|pro|od)\s+[^\n.!?:=]{1,40}?)?`
	// separator: is / : / = and their translations, or "changed to".
	separator = `(?:\s+(?:(?:was|has been|is|got|wurde|a été|fue|bylo)\s+)?(?:changed|set|updated|reset|geändert|gesetzt|changé|cambiada|cambiado|změněno|nastaveno|(?:jsem\s+|sem\s+)?(?:změnil|změnila|nastavil|nastavila))\s+(?:to|auf|à|en|a|na)\b|` +
		`(?:\s+(?:is|was|are|(?:should|will|would|must|shall)\s+be|ist|lautet|heißt|heisst|war|wird|bleibt|est|c'est|sera|serait|était|reste|` +
		`es|era|seria|queda|quedo\s+como|sigue\s+siendo|je|bude|bylo|byl)\b|\s+(?:zní|será|sería|wäre|quedó\s+como|zůstává))` + adverb + `(?:\s*:)?|'s\b|` +
		`\s*(?:→|->|=>|[—–])|\s+-\s|,?\s+(?:it's|it is|which is|das ist|c'est)` + adverb + `|\s*(?:改成了?|改为|设为|设置为|设置成|换成了?|变成了?)|` +
		`\s*(?:是|为|為|は|는|은)\s*[:：]?|\s*(?:[:：=]|=>))`
	// adverb: "is now", "ist jetzt", "est désormais" before the value.
	adverb = `(?:\s+(?:now|still|currently|literally|actually|just|simply|basically|eigentlich|einfach|jetzt|nun|noch|immer noch|maintenant|désormais|toujours|encore|ahora|ya|todavía|todavia)\b|\s+(?:teď|nyní|pořád|stále))?`
)

// keywordAnchor: where a keyword occurs in the lower-cased text.
var keywordAnchor = anchor(true, slices.Concat(passwordKeywords, keyKeywords)...)

// setAnchor: the words that start "set the admin password to …".
var setAnchor = anchor(true, "set", "change", "reset", "update")

// They are matched on the ASCII-lower-cased text: folding case in the
// pattern costs more than the rest of the match.
var afterKeywordRE = regexp.MustCompile(`^["']?\]?` + filler + separator + `[ \t]*`)

// afterKeywordLooseRE lets one or two words of any kind stand between the
// keyword and the separator ("mot de passe provisoire :", "the password I
// used was", "le mdp wifi c'est"): only a value no sentence would have
// counts after it.
var afterKeywordLooseRE = regexp.MustCompile(`^["']?(?:\s+[^\s:=：]{1,20}){1,2}?` + separator + `[ \t]*`)

// setPasswordRE: "set the admin password to …", "change my password to …".
var setPasswordRE = regexp.MustCompile(`^(?:set|change|changed|reset|update|updated)\s+(?:(?:the|my|our|your|his|her|their|an?)\s+)?` +
	`(?:[\w'’-]+\s+){0,2}?(?:password|passwd|passphrase|pin)\s+(?:back\s+)?to\s+`)

// useToLogInRE: "use hunter2024!? to log in", "use Ostrich-9 to unlock it":
// the word between is what opens it.
var useToLogInRE = regexp.MustCompile(`^use\s+["'“]?([^\s"'”]{6,64}?)["'”]?\s+to\s+(?:log\s*in|log\s*on|sign\s*in|login|unlock|decrypt)\b`)

// useAnchor: the rare end of the phrase, from which "use" is looked for
// back.
var useAnchor = anchor(true, "to log", "to sign", "to unlock", "to decrypt")

// ownLineRE: a keyword alone on its line, the value on the next
// ("PASSWORD\nPurpleMoose#2210", "Wi-Fi key:\n  Rtr!9x…").
var ownLineRE = regexp.MustCompile(`^[ \t]*:?[ \t]*\r?\n[ \t]*`)

// weakKeywords are password keywords that are common words or
// abbreviations too ("pass the key", "PW stands for"): before ":" or "="
// they take any password, after a word ("wifi pw is …") only one no
// sentence would have (strongValue).
var weakKeywords = map[string]bool{"pass": true, "pw": true, "パス": true}

// notSecretKeys are the words that make a key public or a mere name:
// "public key", "primary key", "idempotency key".
var notSecretKeys = map[string]bool{"public": true, "publishable": true, "pub": true, "host": true, "primary": true, "foreign": true,
	"sort": true, "partition": true, "cache": true, "idempotency": true, "object": true, "dictionary": true, "map": true,
	"öffentlicher": true, "öffentliche": true, "publique": true, "pública": true, "publica": true, "veřejný": true, "verejny": true}

func findContext(in *input, out []candidate) []candidate {
	text, lower := in.text, in.lower
	last := -1
	for _, i := range in.hits[keywordAnchor] {
		if i < last {
			continue // inside the keyword before ("token" of "api token")
		}
		kw := keywordAt(lower[i:])
		kwEnd := i + len(kw)
		last = kwEnd
		if c := lastByte(text[i:kwEnd]); isASCIIWordByte(c) && kwEnd < len(text) && isASCIIWordByte(text[kwEnd]) {
			continue // "passwords", "tokenizer", "max_tokens"
		}
		if len(kw) <= 4 && i > 0 && isASCIILetter(text[i-1]) {
			continue // "spin", "cmdp": a short keyword inside a word
		}
		if cjkCompoundAfter(text[kwEnd:]) {
			continue // "비밀번호 관리자는 1Password 써요"
		}
		if isBareKeyKeyword[kw] && notSecretKeys[strings.ToLower(wordBefore(text, i))] {
			continue // "public key: age1…", "primary key is user_id"
		}
		if i > 0 && (text[i-1] == ':' || text[i-1] == '/') && inResourceName(lower, i) {
			continue // "arn:aws:…:secret:api-key-Ab12Cd" names a secret, holds none
		}
		class := classOf(kw)
		if class == classCode {
			in.codeKeywordEnds = append(in.codeKeywordEnds, kwEnd)
		}
		// "保险箱密码 7391", "금고 비밀번호 5829": a safe's password is a PIN.
		device := class == classPassword && (nearDevice(lower[max(0, i-24):i]) || nearDevice(lower[kwEnd:min(len(lower), kwEnd+32)]))
		sep := afterKeywordRE.FindStringIndex(lower[kwEnd:min(len(lower), kwEnd+160)])
		if sep == nil && class == classPassword && aloneOnLine(text, i) {
			if m := ownLineRE.FindStringIndex(text[kwEnd:min(len(text), kwEnd+16)]); m != nil {
				out = contextValue(text, kwEnd+m[1], classStrongPassword, out)
				continue
			}
		}
		if sep == nil && !weakKeywords[kw] {
			if loose := afterKeywordLooseRE.FindStringIndex(lower[kwEnd:min(len(lower), kwEnd+160)]); loose != nil &&
				!compoundHeads[strings.ToLower(strings.Trim(firstWord(text[kwEnd:min(len(text), kwEnd+64)]), "-"))] {
				strong := classLoosePassword
				switch {
				case class == classCode:
					// "Die PIN meines Handys lautet 5928".
					strong = classCode
				case class != classPassword:
					strong = classBareKey
				case device:
					// "카드 비밀번호 4자리는 7315": what opens a card or a
					// door is a PIN.
					strong = classCode
				}
				n := len(out)
				if out = contextValue(text, kwEnd+loose[1], strong, out); len(out) > n {
					continue
				}
				// "password Vx4kR9mT2q (it was on the sticker)": the
				// words the loose pattern took for a separator came
				// after the value.
			}
		}
		if sep == nil {
			// "mot de passe NasMaison_88", "auth token 2241…", "门禁密码
			// 2580#": no separator, so only a value no sentence would have.
			if strings.HasPrefix(text[kwEnd:], " ") {
				s, e, quoted := valueAt(text, kwEnd+1)
				v := text[s:e]
				switch {
				case s == e, strings.Contains(v, "="): // "bad_password attempts=4": another field
				case quoted && class == classPassword && passwordValue(v, true, text[e:]):
					// `passphrase "correct-lantern-basalt-ferry"`.
					out = append(out, candidate{Finding{"password", s, e}, rankContext})
				case weakKeywords[kw]:
					// "FTP user webmaster pass W3bM@ster", but not "pass
					// arg_1 to f": a symbol no identifier has.
					if strongValue(v) && strings.ContainsAny(v, "!#$%&*+?@^~") {
						out = append(out, candidate{Finding{"password", s, e}, rankContext})
					}
				case class == classPassword && (strongValue(v) || symbolPIN(v) || mixedValue(v) || device && pinValue(v, true)),
					class == classCode && pinValue(v, true):
					out = append(out, candidate{Finding{"password", s, e}, rankContext})
				case class == classKey && e-s >= 16 && keyValue(v), class == classBareKey && randomKeyValue(v):
					out = append(out, candidate{Finding{"api-key", s, e}, rankContext})
				}
			}
			continue
		}
		sepText := strings.TrimSpace(text[kwEnd : kwEnd+sep[1]])
		if weakKeywords[kw] && !strings.HasSuffix(sepText, ":") && !strings.HasSuffix(sepText, "=") {
			class = classWeakPassword
		}
		out = contextValue(text, kwEnd+sep[1], class, out)
	}
	for _, j := range in.hits[useAnchor] {
		k := strings.LastIndex(lower[max(0, j-80):j], "use ")
		if k < 0 {
			continue
		}
		i := max(0, j-80) + k
		if i > 0 && isASCIIWordByte(lower[i-1]) {
			continue
		}
		if m := useToLogInRE.FindStringSubmatchIndex(lower[i:min(len(lower), i+120)]); m != nil {
			if v := text[i+m[2] : i+m[3]]; hasLetterAndDigit(v) && !isPlaceholder(v) && !looksLikeLocation(v) {
				out = append(out, candidate{Finding{"password", i + m[2], i + m[3]}, rankContext})
			}
		}
	}
	for _, i := range in.hits[setAnchor] {
		if i > 0 && isASCIIWordByte(lower[i-1]) {
			continue
		}
		if m := setPasswordRE.FindStringIndex(lower[i:min(len(lower), i+120)]); m != nil {
			out = contextValue(text, i+m[1], classPassword, out)
		}
	}
	return out
}

// aloneOnLine: only blanks or a list bullet stand before i on its line.
func aloneOnLine(text string, i int) bool {
	for j := i - 1; j >= 0 && text[j] != '\n'; j-- {
		if !strings.ContainsRune(" \t-*•", rune(text[j])) {
			return false
		}
	}
	return true
}

// compoundHeads are nouns that, after a keyword, make a thing other than
// the secret: "password manager is 1Password", "token limit is 8k".
var compoundHeads = set(strings.Fields(`manager managers policy policies hint field length reset requirement requirements rule rules
	strength expiry expiration history vault store safe generator prompt form box file hash rotation change protection limit count
	budget usage format type name id header prefix scope scopes endpoint url page screen dialog setting settings option
	manager-app fingerprint fingerprints gestionnaire verwaltung richtlinie länge feld gestor política longitud správce délka`))

// firstWord is the first word of s after leading spaces and hyphens.
func firstWord(s string) string {
	s = strings.TrimLeft(s, " \t-_")
	if i := strings.IndexAny(s, " \t:=,."); i >= 0 {
		return s[:i]
	}
	return s
}

// keywordClass is what a keyword's value must look like.
type keywordClass int

const (
	classPassword       keywordClass = iota // passwordValue
	classStrongPassword                     // strongValue: a keyword alone on its line
	classWeakPassword                       // strongValue or wordWithDigits: a weak keyword after a word
	classLoosePassword                      // strongValue or mixedValue: words between keyword and separator
	classCode                               // pinValue: PINs, door and alarm codes
	classKey                                // keyValue
	classBareKey                            // randomKeyValue: "key" alone
)

func classOf(kw string) keywordClass {
	switch {
	case isCodeKeyword[kw] || strings.HasPrefix(kw, "pin"):
		return classCode
	case isPasswordKeyword[kw]:
		return classPassword
	case isBareKeyKeyword[kw]:
		return classBareKey
	}
	return classKey
}

// contextValue adds the value at at, if it looks like a credential.
func contextValue(text string, at int, class keywordClass, out []candidate) []candidate {
	s, e, quoted := valueAt(text, at)
	// "mon code PIN est le 4821", "la clave es la Gato7": an article
	// between the separator and the value.
	if !quoted && e < len(text) && text[e] == ' ' && articles[strings.ToLower(text[s:e])] {
		// After an article a word ("la misma", "das alte") is more
		// likely than a password: only a value with a digit or a symbol.
		if s, e, quoted = valueAt(text, e+1); isPlainWord(text[s:e]) {
			return out
		}
	}
	if s == e || strings.HasPrefix(text[e:], "...") || strings.HasPrefix(text[e:], "…") {
		return out // "pypi-...": the docs' elision
	}
	v := text[s:e]
	var ok bool
	kind := "password"
	switch class {
	case classCode:
		ok = pinValue(v, false)
	case classPassword:
		ok = passwordValue(v, quoted, text[e:])
	case classStrongPassword:
		ok = strongValue(v) || symbolPIN(v)
	case classWeakPassword:
		ok = strongValue(v) || symbolPIN(v) || wordWithDigits(v)
	case classLoosePassword:
		ok = strongValue(v) || symbolPIN(v) || mixedValue(v)
	case classKey:
		ok, kind = keyValue(v), "api-key"
	case classBareKey:
		ok, kind = randomKeyValue(v), "api-key"
	}
	if !ok {
		return out
	}
	return append(out, candidate{Finding{kind, s, e}, rankContext})
}

// articles may stand between a separator and the value.
var articles = map[string]bool{"le": true, "la": true, "l'": true, "el": true, "der": true, "die": true, "das": true}

// randomKeyValue: what a generated key looks like — 32 or more hex digits
// (not a UUID: its dashes sit elsewhere), or 20 or more letters and digits of both kinds with the entropy of a
// random string.
func randomKeyValue(v string) bool {
	if isPlaceholder(v) || looksLikeLocation(v) {
		return false
	}
	// "id:secret" pairs: the secret decides.
	if k := strings.LastIndexByte(v, ':'); k > 0 && k < len(v)-1 {
		return randomKeyValue(v[k+1:])
	}
	// A hex key may carry a short suffix: Mailchimp's data centre, "-us14".
	hex := len(v) - len(strings.TrimLeft(strings.ToLower(v), "0123456789abcdef"))
	if hex >= 32 && len(v)-hex <= 6 && hasLetterAndDigit(v[:hex]) {
		return true
	}
	return len(v) >= 20 && hasLetterAndDigit(v) && hasUpperAndLower(v) && entropy(v) >= 3.5
}

// inResourceName: the keyword at i is inside an ARN or a secret manager's
// path ("arn:aws:secretsmanager:…:secret:db-password-Ab12").
func inResourceName(lower string, i int) bool {
	from := max(0, i-200)
	word := lower[from:i]
	if k := strings.LastIndexAny(word, " \t\n\"'"); k >= 0 {
		word = word[k+1:]
	}
	return strings.HasPrefix(word, "arn:") || strings.Contains(word, "/secrets/")
}

// wordBefore is the word that ends where the keyword at i begins (its
// last 32 bytes: the words it is compared with are shorter).
func wordBefore(text string, i int) string {
	e := i
	for e > 0 && i-e < 8 && (text[e-1] == ' ' || text[e-1] == '_' || text[e-1] == '-') {
		e--
	}
	s := e
	for s > 0 && e-s < 32 {
		r, size := utf8.DecodeLastRuneInString(text[:s])
		if !unicode.IsLetter(r) {
			break
		}
		s -= size
	}
	return text[s:e]
}

func lastByte(s string) byte {
	if s == "" {
		return 0
	}
	return s[len(s)-1]
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isASCIIWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

var nextParamRE = regexp.MustCompile(`&[A-Za-z_][A-Za-z0-9_.-]*=`)

// quotePairs are the quotes a value may stand in, opening to closing.
var quotePairs = map[rune]rune{'"': '"', '\'': '\'', '`': '`', '「': '」', '“': '”', '„': '“', '«': '»', '‘': '’', '『': '』'}

// valueAt reads the value starting at at: a quoted string (without its
// quotes), else a run of printable ASCII with trailing punctuation
// dropped ("hunter2." is "hunter2"; "hunter2!!" stays whole).
func valueAt(text string, at int) (start, end int, quoted bool) {
	r, size := utf8.DecodeRuneInString(text[at:])
	if closing, ok := quotePairs[r]; ok {
		rest := text[at+size:]
		stop := strings.IndexRune(rest, closing)
		if stop > 0 && stop <= 200 && !strings.ContainsAny(rest[:stop], "\n") {
			return at + size, at + size + stop, true
		}
		return at, at, false
	}
	end = at
	for end < len(text) {
		r, size := utf8.DecodeRuneInString(text[end:])
		if r <= ' ' || r == 0x7f || (r >= utf8.RuneSelf && !unicode.Is(unicode.Latin, r)) {
			break
		}
		end += size
	}
	v := text[at:end]
	// A query string's next parameter is not part of the value.
	if m := nextParamRE.FindStringIndex(v); m != nil && m[0] > 0 {
		v = v[:m[0]]
	}
	v = strings.TrimRight(v, ".,;:)]}>'\"")
	return at, at + len(v), false
}

// passwordValue: anything that is not a placeholder, a path, an address,
// or a plain word of a sentence ("the password is required"). A lower-case
// word counts only quoted or at the end of its clause ("the wifi password
// is pineapple.").
func passwordValue(v string, quoted bool, after string) bool {
	if utf8.RuneCountInString(v) < 4 || isPlaceholder(v) || looksLikeLocation(v) {
		return false
	}
	if !isPlainWord(v) {
		return true
	}
	if quoted {
		return true
	}
	// A word of another language than English the stop words may not
	// know ("heslo je špatně") counts only quoted.
	return !stopWords[strings.ToLower(v)] && isASCII(v) && clauseEnds(after)
}

// strongValue: what only a credential looks like — letters, digits and a
// capital or a symbol, six characters or more ("NasMaison_88", "Tr0ub4dor&3").
func strongValue(v string) bool {
	if len(v) < 6 || !hasLetterAndDigit(v) || isPlaceholder(v) || looksLikeLocation(v) {
		return false
	}
	return hasUpperAndLower(v) || strings.ContainsAny(v, "!#$%&*+=?@^_~")
}

// wordWithDigits: eight characters or more, letters with a digit among
// them and nothing else ("marzipan4ever", "tigerlily2019"): after "pw is"
// that is the password, where "pw is fine" is not.
func wordWithDigits(v string) bool {
	return len(v) >= 8 && len(v) <= 64 && hasLetterAndDigit(v) && strings.Trim(v, alnumChars) == "" &&
		!isPlaceholder(v)
}

// mixedValue: a word of eight characters or more that runs letters and
// digits together, with three letters and two digits at least
// ("sarang0214", "summer2021"): few words of a sentence look like that
// ("h264", "win10" are shorter), but a password a person chose often
// does.
func mixedValue(v string) bool {
	if len(v) < 8 || len(v) > 64 {
		return false
	}
	letters, digits := 0, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letters++
		case c == '-' || c == '_' || c == '.':
		default:
			return false
		}
	}
	// The placeholder and location checks read long word lists: last.
	return letters >= 3 && digits >= 2 && !isPlaceholder(v) && !looksLikeLocation(v)
}

// keyValue: at least 8 characters with letters and digits (or long and
// of mixed case), not a placeholder, a path or an address.
func keyValue(v string) bool {
	if len(v) < 8 || isPlaceholder(v) || looksLikeLocation(v) {
		return false
	}
	return hasLetterAndDigit(v) || (len(v) >= 20 && hasUpperAndLower(v) && !isPlainWord(v))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func hasUpperAndLower(s string) bool {
	up, low := false, false
	for i := 0; i < len(s); i++ {
		up = up || s[i] >= 'A' && s[i] <= 'Z'
		low = low || s[i] >= 'a' && s[i] <= 'z'
	}
	return up && low
}

// isPlainWord: letters (and inner hyphens) with at most a capital first
// letter: "required", "Hunter", "case-sensitive", "špatně".
func isPlainWord(v string) bool {
	for i, r := range v {
		switch {
		case unicode.IsLower(r):
		case unicode.IsUpper(r) && i == 0:
		case r == '-' && i > 0 && i < len(v)-1:
		default:
			return false
		}
	}
	return true
}

// looksLikeLocation: a path, a URL or an e-mail address, or a vault's
// path of lower-case names ("team-ai/openai-dev").
func looksLikeLocation(v string) bool {
	if strings.Contains(v, "/") && strings.Trim(v, "abcdefghijklmnopqrstuvwxyz0123456789-_./") == "" && !strings.HasSuffix(v, "/") &&
		strings.Count(v, "/") <= 4 && hasLetters(strings.Split(v, "/")) {
		return true
	}
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") ||
		strings.Contains(v, "://") || (len(v) > 2 && v[1] == ':' && v[2] == '\\') {
		return true
	}
	at := strings.IndexByte(v, '@')
	return at > 0 && strings.Contains(v[at:], ".") && !strings.ContainsAny(v, "!#$%^&*()")
}

// clauseEnds: what follows a value ends its clause — the end of the text,
// punctuation, a line break, or a conjunction.
func clauseEnds(after string) bool {
	after = strings.TrimLeft(after, " \t")
	if after == "" {
		return true
	}
	if strings.ContainsRune(".,;!?)\n\r", rune(after[0])) {
		return true
	}
	w, _, _ := strings.Cut(after, " ")
	switch strings.ToLower(w) {
	case "and", "but", "und", "aber", "et", "mais", "y", "pero", "a", "ale":
		return true
	}
	return false
}

// stopWords are the plain words that follow "password is" in a sentence
// about a password rather than one that gives it.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		the a an not too very so required incorrect correct wrong invalid valid expired empty set stored saved kept
		in on at still now being missing weak strong long short same different changed reset ok okay fine secure safe
		hashed encrypted encoded unknown none null nil true false yes no my your our their his her its this that these
		those here there see below above what which where how who when why also only just been case-sensitive optional
		mandatory needed necessary important secret private hidden visible available unavailable known unchanged new old
		default generated random rotated revoked leaked compromised working broken locked unlocked disabled enabled active
		inactive right simple easy hard difficult complex complicated something anything nothing shared public managed
		handled written saved forgotten lost same used reused unique strong weak obvious guessable sent attached rejected
		accepted ignored different about like for with without from into onto
		nicht falsch richtig leer abgelaufen geheim sicher zu sehr ein eine der die das mein meine dein deine unser hier
		noch jetzt gleich neu alt
		pas faux fausse vide incorrecte correcte trop tres un une le la les mon ma ton ta notre ici encore nouveau
		nouvelle ancien
		incorrecta incorrecto correcta correcto vacia vacio caducada muy el mi tu nuestra aqui todavia nueva nuevo
		segura seguro
		spatne spravne prazdne neplatne moc velmi moje tvoje nase tady jeste nove stare`) {
		m[w] = true
	}
	return m
}()

// hasLetters: every part has two letters or more: names, not base64.
func hasLetters(parts []string) bool {
	for _, p := range parts {
		n := 0
		for i := 0; i < len(p); i++ {
			if p[i] >= 'a' && p[i] <= 'z' {
				n++
			}
		}
		if n < 2 {
			return false
		}
	}
	return true
}
