package redact

import (
	"encoding/base64"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Secrets read from a keyword's clause however the words between are
// phrased, and the shapes and fields that carry one wherever they stand:
// CJK clauses, admin pairs, .pgpass lines, Discord tokens, security
// answers, XML and Wi-Fi QR fields, raw wallet keys, credentials in code.
// (Codes read from a clause are codes.go's.)

// clauseSpan is how far from its keyword a code or a value is looked for
// in a clause.
const clauseSpan = 60

// lastWordBefore is the word that ends right before p (spaces between).
func lastWordBefore(s string, p int) string {
	e := p
	for e > 0 && s[e-1] == ' ' {
		e--
	}
	b := e
	for b > 0 && isASCIIWordByte(s[b-1]) {
		b--
	}
	return s[b:e]
}

// clauseEnd is where the clause from i ends, at most span bytes on: a
// sentence's end, a line break or a full stop of the CJK scripts.
func clauseEnd(text string, i, span int) int {
	end := min(len(text), i+span)
	for j := i; j < end; {
		r, size := utf8.DecodeRuneInString(text[j:])
		switch r {
		case '\n', '。', '！', '？':
			return j
		case '.', '!', '?':
			if j+1 == len(text) || text[j+1] == ' ' {
				return j
			}
		}
		j += size
	}
	return end
}

// CJK sentences put the value next to the keyword with no space, after a
// particle, or after words the other languages' patterns do not list
// ("临时密码给你：Tmp#8841xy", "LINEのパスワード教えとくね、kuma0815mk だよ",
// "비밀번호 coffee_tto_mani"). There an ASCII word in the keyword's clause
// stands out from the script around it: each one shaped as a credential
// is taken.

// maxCJKValues bounds the values one keyword takes ("0516에서 7720으로": the
// old and the new code).
const maxCJKValues = 3

func findCJKValues(in *input, out []candidate) []candidate {
	text, lower := in.text, in.lower
	for _, i := range in.hits[keywordAnchor] {
		kw := keywordAt(lower[i:])
		if kw == "" || isASCII(kw) || classOf(kw) == classKey || classOf(kw) == classBareKey || cjkCompoundAfter(text[i+len(kw):]) {
			continue
		}
		end := clauseEnd(text, i+len(kw), clauseSpan)
		taken := 0
		for p := i + len(kw); p < end && taken < maxCJKValues; {
			if strings.HasPrefix(text[p:], "（") || text[p] == '(' {
				break // "密码是否正确（错误码：40103）": what follows is another thing
			}
			c := text[p]
			if c >= utf8.RuneSelf || c == ' ' || c == '\t' || strings.IndexByte(`,;:()[]"'`, c) >= 0 {
				if c >= utf8.RuneSelf {
					_, size := utf8.DecodeRuneInString(text[p:])
					p += size
				} else {
					p++
				}
				continue
			}
			e := p
			for e < len(text) && text[e] > ' ' && text[e] < utf8.RuneSelf {
				e++
			}
			if e == p {
				p++ // a control character
				continue
			}
			if errorWord(text[i+len(kw) : p]) {
				break // the words before it name an error: its code is no secret
			}
			v := strings.TrimRight(text[p:e], ".,;:!?)]}>'\"")
			if cjkValue(v) {
				out = append(out, candidate{Finding{"password", p, p + len(v)}, rankContext})
				taken++
			}
			p = e
		}
	}
	return out
}

// cjkValue: a credential's shape — a PIN, a word of letters and digits, a
// symbol password, or words joined by underscores — and not a user name,
// an address or a version.
func cjkValue(v string) bool {
	if len(v) < 4 || len(v) > 64 || isPlaceholder(v) || looksLikeLocation(v) || strings.Count(v, ".") >= 2 {
		return false
	}
	if pinValue(v, true) || symbolPIN(v) {
		return !year(v)
	}
	if strongValue(v) || mixedValue(v) || len(v) >= 6 && hasLetterAndDigit(v) && !strings.ContainsAny(v, "-.") {
		return true
	}
	return len(v) >= 8 && strings.Contains(v, "_") && strings.Trim(v, "abcdefghijklmnopqrstuvwxyz_") == "" && !strings.HasPrefix(v, "_")
}

// errorWord: the words between keyword and number name an error, whose
// code is no secret.
func errorWord(between string) bool { return containsAny(strings.ToLower(between), errorWords) }

var errorWords = []string{"错误", "錯誤", "エラー", "오류", "에러", "error", "fehler", "chyba"}

// cjkCompounds after a password keyword make it another thing: "비밀번호
// 관리자" (password manager), "密码管理器", "パスワードマネージャー".
var cjkCompounds = []string{"관리자", "관리 앱", "매니저", "정책", "管理器", "管理工具", "管理软件", "策略", "长度", "マネージャ", "管理アプリ", "ポリシー", "の長さ"}

func cjkCompoundAfter(rest string) bool {
	rest = strings.TrimLeft(rest, " ")
	for _, c := range cjkCompounds {
		if strings.HasPrefix(rest, c) {
			return true
		}
	}
	return false
}

// Shapes that carry a password wherever they are.
var (
	// adminPairRE: "admin / Fritz!Box2024", "admin／Yuzu_Ponzu55": an
	// administrator's name, a slash, and a password no path has.
	adminPairRE = regexp.MustCompile(`^(?:admin|root|administrator)\s*(?:/|／)\s*([^\s/／,，、。]{6,64})`)
	// pgpassRE: a .pgpass line, host:port:database:user:password.
	pgpassRE = regexp.MustCompile(`^[A-Za-z0-9.*_-]*[A-Za-z*][A-Za-z0-9.*_-]*:(?:\d{2,5}|\*):[^\s:]+:[^\s:]+:(\S{4,})$`)
	// echoLoginRE: "echo X | docker login --password-stdin".
	echoLoginRE = regexp.MustCompile(`^echo\s+['"]?([^\s'"|]{6,})['"]?\s*\|\s*(?:docker|podman|nerdctl|helm\s+registry|oras|skopeo|buildah)\s+login\b[^\n|;&]*--password-stdin`)
)

var (
	adminAnchor = anchor(true, "admin/", "admin /", "admin／", "admin ／", "root/", "root /", "root／", "administrator/", "administrator /")
	echoAnchor  = anchor(true, "echo ")
)

func findPairs(in *input, out []candidate) []candidate {
	text, lower := in.text, in.lower
	for _, i := range in.hits[adminAnchor] {
		if i > 0 && (isASCIIWordByte(text[i-1]) || text[i-1] == '/') {
			continue
		}
		if m := adminPairRE.FindStringSubmatchIndex(lower[i:min(len(lower), i+128)]); m != nil {
			if v := text[i+m[2] : i+m[3]]; strongValue(v) || symbolPassword(v) {
				out = append(out, candidate{Finding{"password", i + m[2], i + m[3]}, rankContext})
			}
		}
	}
	for _, i := range in.hits[echoAnchor] {
		if i > 0 && isASCIIWordByte(text[i-1]) {
			continue
		}
		if m := echoLoginRE.FindStringSubmatchIndex(lower[i:min(len(lower), i+shapedWindow)]); m != nil && !isPlaceholder(text[i+m[2]:i+m[3]]) {
			out = append(out, candidate{Finding{"password", i + m[2], i + m[3]}, rankShaped})
		}
	}
	// Only a line with four colons can be a .pgpass line.
	for at := 0; at < len(text); {
		end := strings.IndexByte(text[at:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += at
		}
		if line := text[at:end]; strings.Count(line, ":") >= 4 {
			if m := pgpassRE.FindStringSubmatchIndex(line); m != nil && !isPlaceholder(line[m[2]:m[3]]) {
				out = append(out, candidate{Finding{"password", at + m[2], at + m[3]}, rankShaped})
			}
		}
		at = end + 1
	}
	return findDiscordTokens(text, out)
}

// findDiscordTokens finds Discord bot tokens, read from their first dot:
// 24 to 28 base64url characters starting with M, N or O, a dot, 6 more, a
// dot, and 27 to 40 more.
func findDiscordTokens(text string, out []candidate) []candidate {
	for at := 0; ; {
		k := strings.IndexByte(text[at:], '.')
		if k < 0 {
			return out
		}
		dot := at + k
		at = dot + 1
		s := dot
		for s > 0 && dot-s < 28 && isBase64URL(text[s-1]) {
			s--
		}
		if n := dot - s; n < 24 || (s > 0 && isBase64URL(text[s-1])) || text[s] < 'M' || text[s] > 'O' {
			continue
		}
		mid := dot + 1
		for mid < len(text) && mid-dot-1 < 7 && isBase64URL(text[mid]) {
			mid++
		}
		if mid-dot-1 != 6 || mid >= len(text) || text[mid] != '.' {
			continue
		}
		e := mid + 1
		for e < len(text) && isBase64URL(text[e]) {
			e++
		}
		if n := e - mid - 1; n < 27 || n > 40 {
			continue
		}
		if tok := text[s:e]; hasLetterAndDigit(tok) && hasUpperAndLower(tok) {
			out = append(out, candidate{Finding{"discord-token", s, e}, rankProvider})
			at = e
		}
	}
}

func isBase64URL(c byte) bool { return isASCIIWordByte(c) || c == '-' }

// A security question's answer opens an account as a password does ("my
// first pet's name for the bank is Pickles", "母の旧姓は「大久保」で登録
// した"). After the words that name the question, the answer is the last
// quoted text that is not the question itself, or else what follows the
// last ":", "is" or "答" in the sentence, up to a comma.
var answerAnchor = anchor(true, "security question", "security q ", "secret question", "security answer", "maiden name", "first pet",
	"sicherheitsfrage", "geheimfrage", "geburtsname", "mädchenname", "bezpečnostní otázk", "bezpecnostni otazk", "rodné příjmení",
	"rodne prijmeni", "密保", "安全问题", "秘密の質問", "旧姓", "보안 질문", "보안질문", "비밀 질문")

// answerSpan bounds how far after its anchor an answer is looked for.
const answerSpan = 160

// answerSeparators lead to an answer given without quotes.
var answerSeparators = []string{": ", "：", " is ", " ist ", " je ", " lautet ", " I put ", " I gave ", "我填的是", "填的是", "是", "답은 ", "은 ", "は"}

func findAnswers(in *input, out []candidate) []candidate {
	text := in.text
	for _, i := range in.hits[answerAnchor] {
		end := min(len(text), i+answerSpan)
		for j := i; j < end; {
			r, size := utf8.DecodeRuneInString(text[j:])
			if r == '\n' || r == '。' || r == '?' || r == '？' || r == '.' && (j+1 == len(text) || text[j+1] == ' ') {
				end = j
				break
			}
			j += size
		}
		if s, e, ok := lastAnswerQuote(text, i, end); ok {
			out = append(out, candidate{Finding{"security-answer", s, e}, rankContext})
			continue
		}
		best := -1
		for _, sep := range answerSeparators {
			if k := strings.LastIndex(text[i:end], sep); k >= 0 && i+k+len(sep) > best {
				best = i + k + len(sep)
			}
		}
		if best < 0 {
			continue
		}
		e := best
		for e < end {
			r, size := utf8.DecodeRuneInString(text[e:])
			if r == ',' || r == '，' || r == '、' || r == ';' || r == '(' {
				break
			}
			e += size
		}
		v := strings.TrimSpace(text[best:e])
		if v == "" || utf8.RuneCountInString(v) > 40 || isPlaceholder(v) || stopWords[strings.ToLower(firstWord(v))] {
			continue
		}
		s := best + strings.Index(text[best:e], v)
		out = append(out, candidate{Finding{"security-answer", s, s + len(v)}, rankContext})
	}
	return out
}

// lastAnswerQuote finds the last quoted text in text[from:to] that is not
// the question: a quote right after the words that ask ("asks 'street you
// grew up on'", "质问「…」") or one that ends as a question does.
func lastAnswerQuote(text string, from, to int) (start, end int, ok bool) {
	for j := from; j < to; {
		r, size := utf8.DecodeRuneInString(text[j:])
		closing, isQuote := quotePairs[r]
		if !isQuote {
			j += size
			continue
		}
		rest := text[j+size : to]
		k := strings.IndexRune(rest, closing)
		if k <= 0 {
			j += size
			continue
		}
		q := rest[:k]
		before := strings.ToLower(text[max(from, j-16):j])
		asked := strings.HasSuffix(q, "?") || strings.HasSuffix(q, "？") || strings.HasSuffix(q, "什么") || strings.HasSuffix(q, "名前") ||
			strings.HasSuffix(q, "이름") || strings.HasSuffix(strings.ToLower(q), "name") || containsAny(before, askingWords)
		if !asked && utf8.RuneCountInString(q) <= 40 {
			start, end, ok = j+size, j+size+k, true
		}
		j += size + k + utf8.RuneLen(closing)
	}
	return start, end, ok
}

// askingWords, just before a quote, make it the question, not the answer.
var askingWords = []string{"ask", "question", "frage", "otázk", "问题", "質問", "질문"}

// A word with a capital, a small letter, a digit and a symbol, and no
// other characters, is a password wherever it stands ("remember this one
// for the tax portal: Trombone#4417xq"): names, versions, code and
// addresses do not mix all four without brackets, quotes or "=".
func findLoneStrong(in *input, out []candidate) []candidate {
	text := in.text
	for s := 0; s < len(text); {
		for s < len(text) && isSpaceByte(text[s]) {
			s++
		}
		e := s
		for e < len(text) && !isSpaceByte(text[e]) {
			e++
		}
		if e-s >= 8 {
			if v, at := trimWord(text[s:e]); fourClasses(v) {
				out = append(out, candidate{Finding{"password", s + at, s + at + len(v)}, rankEntropy})
			}
		}
		s = e
	}
	return out
}

// fourClasses: 8 to 64 characters, only letters, digits and the symbols
// passwords use, with at least one of each kind, three letters, and no
// shape of an address, a handle, a tag or a pointer ("#Tag2!", "@Bob3!",
// "*v1.Secret": a symbol first).
func fourClasses(v string) bool {
	if len(v) < 8 || len(v) > 40 || !isASCIIWordByte(v[0]) {
		return false
	}
	var upper, lower, digit, symbol bool
	letters := 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= 'A' && c <= 'Z':
			upper, letters = true, letters+1
		case c >= 'a' && c <= 'z':
			lower, letters = true, letters+1
		case c >= '0' && c <= '9':
			digit = true
		case strings.IndexByte("!#$%&*?@^~", c) >= 0:
			symbol = true
		case c == '+': // base64 has it too: only another symbol counts
		case c == '-' || c == '_' || c == '.':
		default:
			return false
		}
	}
	return upper && lower && digit && symbol && letters >= 3 && !looksLikeLocation(v) && !isPlaceholder(v)
}

// Formats that carry a credential in a field of their own.
var (
	// xmlSecretRE: <password>…</password> and its kin in an XML config.
	xmlSecretRE = regexp.MustCompile(`^<(?:password|passwd|pwd|secret|token|apikey|api_key|accesskey|secretkey|clientsecret)>([^<\s]{4,200})</`)
	// wifiQRRE: the password field of a Wi-Fi QR code's text.
	wifiQRRE = regexp.MustCompile(`^WIFI:(?:[^;\n]*;){0,4}?P:((?:\\.|[^;\\\n])+);`)
	// dockerAuthRE: a registry's "auth" in a Docker config, base64 of
	// "user:password".
	dockerAuthRE = regexp.MustCompile(`^"auth"\s*:\s*"([A-Za-z0-9+/]{8,}={0,2})"`)
)

var (
	xmlAnchor        = anchor(true, "<password>", "<passwd>", "<pwd>", "<secret>", "<token>", "<apikey>", "<api_key>", "<accesskey>", "<secretkey>", "<clientsecret>")
	wifiQRAnchor     = anchor(false, "WIFI:")
	dockerAuthAnchor = anchor(false, `"auth"`)
)

// walletWords: the words near which 64 hex digits are a private key, not
// a checksum.
var walletWords = []string{"private key", "privatekey", "private_key", "privkey", "priv key", "wallet", "metamask", "keypair", "seed",
	"私钥", "秘密鍵", "개인키", "개인 키", "privátní klíč", "privater schlüssel"}

// walletSpan is how far from a wallet word a raw key may be.
const walletSpan = 120

func findFields(in *input, out []candidate) []candidate {
	text, lower := in.text, in.lower
	for _, i := range in.hits[xmlAnchor] {
		if m := xmlSecretRE.FindStringSubmatchIndex(lower[i:min(len(lower), i+256)]); m != nil && !isPlaceholder(text[i+m[2]:i+m[3]]) {
			out = append(out, candidate{Finding{"password", i + m[2], i + m[3]}, rankShaped})
		}
	}
	for _, i := range in.hits[wifiQRAnchor] {
		if m := wifiQRRE.FindStringSubmatchIndex(text[i:min(len(text), i+512)]); m != nil && !isPlaceholder(text[i+m[2]:i+m[3]]) {
			out = append(out, candidate{Finding{"password", i + m[2], i + m[3]}, rankShaped})
		}
	}
	for _, i := range in.hits[dockerAuthAnchor] {
		m := dockerAuthRE.FindStringSubmatchIndex(text[i:min(len(text), i+1024)])
		if m == nil {
			continue
		}
		if raw, err := base64.StdEncoding.DecodeString(text[i+m[2] : i+m[3]]); err == nil && strings.Contains(string(raw), ":") {
			out = append(out, candidate{Finding{"registry-auth", i + m[2], i + m[3]}, rankShaped})
		}
	}
	// A raw key needs a wallet word within walletSpan of it: none in the
	// text, no key, and no scan.
	if !containsAny(lower, walletWords) {
		return out
	}
	for i := 0; i < len(text); i++ {
		if !isHex(text[i]) || i > 0 && isASCIIWordByte(text[i-1]) {
			continue
		}
		j := i
		if strings.HasPrefix(text[i:], "0x") {
			j += 2
		}
		k := j
		for k < len(text) && isHex(text[k]) {
			k++
		}
		if k-j == 64 && (k == len(text) || !isASCIIWordByte(text[k])) &&
			containsAny(lower[max(0, i-walletSpan):min(len(text), k+walletSpan)], walletWords) && !digestBefore(lower, i) {
			out = append(out, candidate{Finding{"private-key", i, k}, rankContext})
		}
		i = k
	}
	return out
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// digestBefore: the words just before a hex run name a hash or an
// address ("tx hash", "sha256", "address").
func digestBefore(lower string, at int) bool {
	return containsAny(lower[max(0, at-32):at], digestNames)
}

var digestNames = []string{"hash", "sha", "checksum", "digest", "tx", "address", "txid", "commit", "public", "pubkey"}

// Credentials in code: the string arguments of a call that logs in or
// connects ("AuthTokens.basic("neo4j", "Lichen-Otter-7741")",
// "DriverManager.getConnection(url, "crm_svc", "Plum-Anchor-5521!")",
// "server.login("noreply@…", "qzvm ltrw bkcp hxye")"), SQL's "IDENTIFIED
// BY", a Go DSN's "user:password@tcp(", WordPress's define('AUTH_KEY',
// '…'), and a key echoed into a key file.
var (
	callAnchor = anchor(true, "auth(", "auth.", "basic(", "login(", "connect(", "connection(", "credential", "plainauth(", "client.new(",
		"basic_auth=(", "http_auth=(", "auth=(", "define(")
	identifiedRE = regexp.MustCompile(`^identified\s+(?:with\s+\S+\s+)?by\s+(?:password\s+)?['"]?([^'"\s;]{4,128})`)
	dsnRE        = regexp.MustCompile(`^([A-Za-z0-9_.-]{1,64}):([^\s@"'/]{3,128})@(?:tcp|unix)\(`)
	echoKeyRE    = regexp.MustCompile(`^echo\s+['"]?([0-9a-f]{32,128})['"]?\s*>\s*\S*(?:\.key|secret\S*)\b`)
	defineRE     = regexp.MustCompile(`^define\(\s*['"](\w*(?:key|salt|password|secret)\w*)['"]\s*,\s*(['"])`)
)

var (
	identifiedAnchor = anchor(true, "identified ")
	dsnAnchor        = anchor(false, "@tcp(", "@unix(")
)

// callSpan bounds how far a call's arguments are read.
const callSpan = 400

func findCode(in *input, out []candidate) []candidate {
	text, lower := in.text, in.lower
	for _, i := range in.hits[callAnchor] {
		if strings.HasPrefix(lower[i:], "define(") {
			if m := defineRE.FindStringSubmatchIndex(lower[i:min(len(lower), i+callSpan)]); m != nil {
				q := text[i+m[4]]
				s := i + m[5]
				if e := strings.IndexByte(text[s:min(len(text), s+callSpan)], q); e >= 8 && !isPlaceholder(text[s:s+e]) {
					out = append(out, candidate{Finding{"secret-key", s, s + e}, rankShaped})
				}
			}
			continue
		}
		open := strings.IndexByte(lower[i:min(len(lower), i+32)], '(')
		if open < 0 {
			continue
		}
		out = callStrings(text, i+open+1, out)
	}
	for _, i := range in.hits[identifiedAnchor] {
		if m := identifiedRE.FindStringSubmatchIndex(lower[i:min(len(lower), i+256)]); m != nil {
			if v := text[i+m[2] : i+m[3]]; !isPlaceholder(v) {
				out = append(out, candidate{Finding{"password", i + m[2], i + m[3]}, rankShaped})
			}
		}
	}
	for _, i := range in.hits[dsnAnchor] {
		s := i
		for s > 0 && !strings.ContainsRune(" \t\n\"'`", rune(text[s-1])) {
			s--
		}
		if m := dsnRE.FindStringSubmatchIndex(text[s:min(len(text), i+6)]); m != nil && !isPlaceholder(text[s+m[4]:s+m[5]]) {
			out = append(out, candidate{Finding{"password", s + m[4], s + m[5]}, rankShaped})
		}
	}
	for _, i := range in.hits[echoAnchor] {
		if m := echoKeyRE.FindStringSubmatchIndex(lower[i:min(len(lower), i+256)]); m != nil {
			out = append(out, candidate{Finding{"secret-key", i + m[2], i + m[3]}, rankShaped})
		}
	}
	return out
}

// callStrings adds the quoted arguments from at (up to the call's ")")
// that are shaped as credentials: user names, hosts and e-mail addresses
// are not.
func callStrings(text string, at int, out []candidate) []candidate {
	end := min(len(text), at+callSpan)
	depth := 0
	for p := at; p < end; p++ {
		switch c := text[p]; c {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return out
			}
			depth--
		case '"', '\'':
			e := strings.IndexByte(text[p+1:end], c)
			if e < 0 {
				return out
			}
			if v := text[p+1 : p+1+e]; credentialString(v) {
				out = append(out, candidate{Finding{"password", p + 1, p + 1 + e}, rankShaped})
			}
			p += e + 1
		}
	}
	return out
}

// credentialString: a quoted argument that is a password or a token: a
// strong or symbol password, a passphrase, 32 hex digits or more, or an
// app password of four groups of four letters.
func credentialString(v string) bool {
	if len(v) < 6 || isPlaceholder(v) || looksLikeLocation(v) {
		return false
	}
	if strongValue(v) || symbolPassword(v) || passphraseWord(v) || isHexDigest(v) {
		return true
	}
	groups := strings.Fields(v)
	if len(groups) != 4 {
		return false
	}
	for _, g := range groups {
		if len(g) != 4 || strings.Trim(g, "abcdefghijklmnopqrstuvwxyz") != "" {
			return false
		}
	}
	return true
}
