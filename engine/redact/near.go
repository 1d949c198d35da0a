package redact

import (
	"slices"
	"strings"
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
	"přihlášení", "prihlaseni", "přihlašovací", "登录", "登入", "ログイン", "로그인", "log into", "log on", "pgpass", "netrc", "htpasswd"})...)

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
		start = max(start, done)
		for s := start; s < end; {
			e := s
			for e < end && !isSpaceByte(text[e]) {
				e++
			}
			out = nearValue(text, s, e, out)
			for s = e; s < end && isSpaceByte(text[s]); s++ {
			}
		}
		done = max(done, end)
	}
	return out
}

// nearValue adds the word text[s:e] if it is a password, or the parts of
// a "user:password" or "host:port:db:user:password" word that are.
func nearValue(text string, s, e int, out []candidate) []candidate {
	v, at := trimWord(text[s:e])
	if symbolPassword(v) {
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
