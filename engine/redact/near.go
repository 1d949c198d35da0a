package redact

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Passwords given in a sentence rather than after "password is": "router
// admin/admin, changed it to Rtr!Adm1n99", "my laptop login is
// Lap_T0p!2026", "set POSTGRES_PASSWORD to Pg!Local_77 in compose". In a
// sentence that names a password or a login, a word made of letters,
// digits and a symbol is the password: such a word in prose is a
// credential, and the sentence says whose. The finder asks for no
// particular wording between the two, so it reads phrasings no pattern
// lists.

// credentialWords: the password keywords (context.go) and the words a
// login is named by.
var credentialAnchor = anchor(true, slices.Concat(passwordKeywords, []string{"login", "log-in", "log in", "sign-in", "signin",
	"credentials", "creds", "anmeldung", "zugangsdaten", "login-daten", "logindaten", "identifiants", "identifiant", "credenciales",
	"přihlášení", "prihlaseni", "přihlašovací", "登录", "登入", "ログイン", "로그인", "log into", "log on", "pgpass", "netrc", "htpasswd",
	// What is opened with a password: an encrypted file, a locked device,
	// a network, an account.
	"encrypted", "decrypt", "unlock", "verschlüsselt", "entschlüssel", "entsperr", "šifrovan", "sifrovan", "odemkn", "dešifr",
	"wifi", "wi-fi", "wlan", "계정", "账号", "帳號", "アカウント",
	"加密", "解密", "解锁", "解鎖", "暗号化", "復号", "ロック解除", "암호화", "복호화", "잠금 해제"})...)

// nearSpan is how far from a credential word, within its sentence, a
// password is looked for.
const nearSpan = 120

func findNear(in *input, out []candidate) []candidate {
	text, lower := in.text, in.lower
	done := 0
	for _, i := range in.hits[credentialAnchor] {
		if i > 0 && isASCIILetter(lower[i-1]) && !isUpperASCII(text[i-1]) {
			continue // "spin", "bypass"; "POSTGRES_PASSWORD" and "DB_PASS" count
		}
		start, end := sentenceAround(text, i)
		named := isPasswordKeyword[keywordAt(lower[i:])]
		if !named {
			start = max(start, done) // a named keyword reads with looser rules
		}
		// "the password is my dog's name. it's Bruno1987": a sentence
		// that names a password may leave the value to the next one.
		next := end
		if named && end < len(text) {
			_, next = sentenceAround(text, min(len(text)-1, end+1))
		}
		for s := start; s < next; {
			e := s
			for e < next && !isSpaceByte(text[e]) {
				e++
			}
			// In the next sentence only its first words, before any label
			// of its own ("・シリアル番号: 2080QAN8821" is another thing).
			if s >= end && (wordsBetween(text, end, s) > 4 || strings.ContainsAny(text[end:s], ":：")) {
				break
			}
			if !namingWordBefore(lower, s) {
				out = nearValue(text, s, e, named, out)
			}
			for s = e; s < next && isSpaceByte(text[s]); s++ {
			}
		}
		done = max(done, next)
	}
	return out
}

// nearValue adds the word text[s:e] if it is a password, or the parts of
// a "user:password" or "host:port:db:user:password" word that are. named:
// the sentence names a password (not only a login or a lock), so a word
// of letters and digits that ends its clause is one too ("my steam
// password is my daughter's name and birth year, maisie2014").
func nearValue(text string, s, e int, named bool, out []candidate) []candidate {
	v, at := trimWord(text[s:e])
	if symbolPassword(v) || passphraseWord(v) || named && passphrase(v, false) || named && mixedValue(v) && codeEnds(text[s+at+len(v):]) &&
		(!strings.ContainsAny(v, ".-_") || hasUpperAndLower(v)) && !isHexDigest(v) && !hasModelNumber(v) {
		return append(out, candidate{Finding{"password", s + at, s + at + len(v)}, rankContext})
	}
	for part := range strings.SplitSeq(v, ":") {
		if len(part) < len(v) && symbolPassword(part) {
			i := s + at + strings.Index(v, part)
			out = append(out, candidate{Finding{"password", i, i + len(part)}, rankContext})
		}
	}
	return out
}

// symbolPassword: six characters or more, with a letter, a digit and a
// symbol no word or number has, and no path, address or key=value pair.
// "=" is left out: "POSTGRES_PASSWORD=x" is findContext's.
func symbolPassword(v string) bool {
	if len(v) < 6 || len(v) > 64 || !isASCII(v) || !hasLetterAndDigit(v) || !strings.ContainsAny(v, "!#$%&*+?@^_~") ||
		strings.ContainsAny(v, "=/\\:") || looksLikeLocation(v) || isPlaceholder(v) || strings.HasPrefix(v, "#") || strings.HasPrefix(v, "@") {
		return false
	}
	// An identifier such as db_user_1 or MAX_RETRIES_3 is letters and
	// underscores: a password mixes cases or symbols beyond "_".
	return hasUpperAndLower(v) || strings.ContainsAny(v, "!#$%&*+?@^~")
}

// passphraseWord: words joined by dots or dashes, capitalised, with a
// number ("Ostrich-Marmalade-4", "Tulpen.Molen.88", "Schildkröte-Mond-88"):
// the shape password generators and advice give, which no name, version
// or product has ("GPT-4o", "Wi-Fi", "v2.1.3", "Model-3" have fewer
// words of three letters or more).
func passphraseWord(v string) bool { return passphrase(v, true) }

// passphrase is passphraseWord's shape, a capital asked for or not
// ("mossy-trail-4412" after "pw is").
func passphrase(v string, capital bool) bool {
	// The shape first: it is cheap and rejects almost every word, where
	// the placeholder and location checks read long word lists.
	if len(v) < 8 || len(v) > 64 || strings.ContainsAny(v, "=/\\:@") {
		return false
	}
	words, digit, upper := 0, false, false
	for part := range strings.FieldsFuncSeq(v, isPartSeparator) {
		// Each part a word (a capital first at most), digits after it,
		// or digits alone: "Vq3xK9mPzT2bLw8D" is an id, not a word.
		letters, digits := 0, 0
		for i, r := range part {
			switch {
			case unicode.IsLetter(r) && digits == 0 && (i == 0 || !unicode.IsUpper(r)):
				letters++
				upper = upper || unicode.IsUpper(r)
			case r >= '0' && r <= '9':
				digits++
				digit = true
			default:
				return false
			}
		}
		if letters >= 3 {
			words++
		}
	}
	return words >= 2 && digit && (upper || !capital) && strings.ContainsAny(v, "-._") &&
		!isPlaceholder(v) && !looksLikeLocation(v)
}

// isPartSeparator joins the parts of a passphrase or a model name.
func isPartSeparator(r rune) bool { return r == '-' || r == '.' || r == '_' }

// wordsBetween counts the words of text[s:e].
func wordsBetween(text string, s, e int) int { return len(strings.Fields(text[s:e])) }

// namingWordBefore: the word before s names something ("the network is
// called Familie_Berger_5G", "SSID Cafe_Guest"): what follows is a name.
func namingWordBefore(lower string, s int) bool {
	switch lastWordBefore(lower, s) {
	case "called", "named", "ssid", "network", "heißt", "heisst", "netz", "jmenuje", "síť", "nommé", "appelé", "llamada", "llamado", "user",
		"username", "benutzer", "nutzername", "uživatel", "login":
		return true
	}
	return false
}

// trimWord strips the punctuation a word carries in a sentence, and
// returns the rest and its offset.
func trimWord(w string) (string, int) {
	t := strings.TrimLeft(w, "\"'([{<“‘«")
	at := len(w) - len(t)
	t = strings.TrimRight(t, "\"')]}>,.;:!?”’»")
	return t, at
}

// sentenceAround is the sentence of text around i, within nearSpan of
// it: from after the last ". ", "! ", "? " or line break before it to the
// next.
func sentenceAround(text string, i int) (start, end int) {
	start = max(0, i-nearSpan)
	for j := i - 1; j > start; j-- {
		if text[j] == '\n' || (text[j] == ' ' && strings.ContainsRune(".!?", rune(text[j-1]))) {
			start = j + 1
			break
		}
	}
	end = min(len(text), i+nearSpan)
	for j := i; j < end; j++ {
		if text[j] == '\n' || (text[j] == ' ' && j > 0 && strings.ContainsRune(".!?", rune(text[j-1]))) {
			return start, j
		}
		if c, size := utf8.DecodeRuneInString(text[j:]); c == '。' || c == '！' || c == '？' {
			return start, j
		} else if size > 1 {
			j += size - 1
		}
	}
	return start, end
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isUpperASCII(c byte) bool { return c >= 'A' && c <= 'Z' }

// isHexDigest: 32 hex digits or more, a checksum's shape.
func isHexDigest(v string) bool {
	if len(v) < 32 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !isHex(v[i]) {
			return false
		}
	}
	return true
}

// hasModelNumber: a part of v is capitals then digits, as a product's
// model is named ("TPLink-AX3000", "RTX4090", "S24").
func hasModelNumber(v string) bool {
	for part := range strings.FieldsFuncSeq(v, isPartSeparator) {
		i := 0
		for i < len(part) && part[i] >= 'A' && part[i] <= 'Z' {
			i++
		}
		j := i
		for j < len(part) && isDigit(part[j]) {
			j++
		}
		if i >= 1 && i <= 5 && j-i >= 2 && j >= len(part)-1 {
			return true
		}
	}
	return false
}

// Passwords handed over with a verb of typing or trying: "try
// Sommer2024!! for the family Netflix", "type qwerMaus99 when it asks",
// "put in hummingbird-Orange-44 and press enter", "probier mal
// Schnee_flocke2020", "prueba con Lucia2012cole". The word after the verb
// must look made up: a symbol password, a passphrase, or letters and
// digits mixed; a capitalised word with a number after it ("Windows11",
// "Bruno1987") only in a sentence that names a password.
// "type in ", "probier mal " and "prueba con " start where "type ",
// "probier " and "prueba " do, so those find them; tryPhrases says how far
// each verb runs.
var tryAnchor = anchor(true, "try ", "type ", "put in ", "enter ", "use ", "reset it to ", "changed it to ", "set it to ",
	"probier ", "versuch ", "nimm ", "gib ", "prueba ", "usa ", "zkus ", "zadej ", "essaie ", "tape ", "mets ")

var tryPhrases = []string{"type in ", "put in ", "reset it to ", "changed it to ", "set it to ", "probier mal ", "prueba con "}

func findTried(in *input, out []candidate) []candidate {
	text, lower := in.text, in.lower
	for _, i := range in.hits[tryAnchor] {
		if i > 0 && isASCIILetter(lower[i-1]) {
			continue
		}
		verb := lower[i:]
		s := i + strings.IndexByte(verb, ' ') + 1
		for _, long := range tryPhrases {
			if strings.HasPrefix(verb, long) {
				s = i + len(long)
			}
		}
		e := s
		for e < len(text) && !isSpaceByte(text[e]) {
			e++
		}
		v := strings.Trim(text[s:e], "\"'“”‘’«»„")
		v = strings.TrimRight(v, ",.;:")
		if v == "" {
			continue
		}
		at := s + strings.Index(text[s:e], v)
		if triedValue(v, sentenceNamesPassword(in, i)) {
			out = append(out, candidate{Finding{"password", at, at + len(v)}, rankContext})
		}
	}
	return out
}

func triedValue(v string, named bool) bool {
	if symbolPassword(v) || passphraseWord(v) {
		return true
	}
	if !mixedValue(v) || hasModelNumber(v) || isHexDigest(v) {
		return false
	}
	return named || hasUpperAndLower(v) && !capitalisedWordNumber(v)
}

// capitalisedWordNumber: a capital, small letters, then digits
// ("Windows11").
func capitalisedWordNumber(v string) bool {
	i := 1
	for i < len(v) && v[i] >= 'a' && v[i] <= 'z' {
		i++
	}
	for i < len(v) && isDigit(v[i]) {
		i++
	}
	return v[0] >= 'A' && v[0] <= 'Z' && i == len(v)
}

// sentenceNamesPassword: a password keyword stands in the sentence around
// i.
func sentenceNamesPassword(in *input, i int) bool {
	start, end := sentenceAround(in.text, i)
	for _, h := range hitsIn(in.hits[credentialAnchor], start, end) {
		if isPasswordKeyword[keywordAt(in.lower[h:])] {
			return true
		}
	}
	return false
}
