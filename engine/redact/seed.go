package redact

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// A wallet's recovery phrase is 12 to 24 plain words: nothing in their
// shape says secret, so the words that name the phrase do ("seed phrase:",
// "mnemonic", "Wiederherstellungsphrase", "助记词"), and somewhere in the
// few lines after them must be a run of at least 12 short lower-case
// words, as the standard word lists have, optionally numbered, with none
// of the little words a sentence needs ("the", "and", "with"): the lists
// leave those out, so a sentence after the word "seed" is not a phrase.
var seedAnchor = anchor(true, "seed phrase", "seed words", "wallet seed", "recovery phrase", "recovery words", "secret recovery phrase",
	"mnemonic", "seed", "backup phrase", "wiederherstellungsphrase", "seed-phrase", "phrase de récupération", "phrase de recuperation",
	"frase semilla", "frase de recuperación", "frase de recuperacion", "obnovovací fráze", "obnovovaci fraze", "助记词", "助記詞",
	"シードフレーズ", "リカバリーフレーズ", "복구 문구", "시드 문구", "니모닉", "wallet words", "24 words", "12 words", "24 wörter", "12 wörter",
	"ledger", "metamask", "trust wallet", "phantom", "electrum", "fromphrase", "wallet")

// minSeedWords is the shortest recovery phrase the standard allows.
const minSeedWords = 12

// seedSpan is how far after its keyword a phrase may start.
const seedSpan = 160

func findSeeds(in *input, out []candidate) []candidate {
	text := in.text
	done := 0
	for _, i := range in.hits[seedAnchor] {
		for p := max(i, done); p < min(len(text), i+seedSpan); p++ {
			if text[p] < 'a' || text[p] > 'z' || p > 0 && isASCIIWordByte(text[p-1]) {
				continue
			}
			s, e, n := seedRun(text, p)
			if n >= minSeedWords {
				out = append(out, candidate{Finding{"seed-phrase", s, e}, rankContext})
				done = e
				break
			}
			p = max(p, e)
		}
	}
	return out
}

// sentenceWords are words every sentence has and no seed word list does.
var sentenceWords = set(strings.Fields(`the and with from that this for are was were you your our have has had will but them then than
	they she him his her who how why what when which into not its`))

// seedRun reads the run of seed words from at: lower-case words of 3 to 8
// letters (the standard lists of other languages have accents: "ámbar",
// "sótano"), with spaces, commas or list numbers ("1." "2)" "3 ") between
// them. It returns where the first word starts, where the last ends, and
// how many there are.
func seedRun(text string, at int) (start, end, words int) {
	start, end = -1, at
	for i := at; i < len(text); {
		j := i
		for j < len(text) && (text[j] == ' ' || text[j] == ',' || text[j] == '\n' || text[j] == '\t') {
			j++
		}
		k := j
		for k < len(text) && text[k] >= '0' && text[k] <= '9' {
			k++
		}
		if k > j && k-j <= 2 && k < len(text) && (text[k] == '.' || text[k] == ')' || text[k] == ' ') {
			j = k + 1
			for j < len(text) && text[j] == ' ' {
				j++
			}
		}
		k, n := j, 0
		for k < len(text) {
			r, size := utf8.DecodeRuneInString(text[k:])
			if !unicode.IsLower(r) {
				break
			}
			k, n = k+size, n+1
		}
		if n < 3 || n > 8 || k < len(text) && isASCIIWordByte(text[k]) || sentenceWords[text[j:k]] {
			break
		}
		if start < 0 {
			start = j
		}
		end, words, i = k, words+1, k
	}
	if start < 0 {
		start = at
	}
	return start, end, words
}

// An account's backup codes are a list of short codes after the words
// that name them ("2FA backup codes for my google account: 4821-7730,
// 9915-2064"): two or more codes of four to six letters and digits, a
// digit in each, optionally two such halves joined by a dash.
var backupCodeAnchor = anchor(true, "backup code", "recovery code", "2fa code", "2fa backup", "one-time code", "backup-code", "recovery-code",
	"wiederherstellungscode", "notfallcode", "sicherungscode", "backup-codes", "záložní kód", "zalozni kod", "obnovovací kód", "obnovovaci kod",
	"备用码", "备份码", "恢复码", "備用碼", "バックアップコード", "リカバリーコード", "백업 코드", "복구 코드", "codes de secours",
	"codes de récupération", "códigos de respaldo", "códigos de recuperación", "codigos de respaldo", "备用验证码", "备用代码", "恢复代码")

// backupCodeSpan is how far after its keyword a list of codes may start,
// and maxCodeGap how far apart its codes may be.
const backupCodeSpan, maxCodeGap = 80, 8

func findBackupCodes(in *input, out []candidate) []candidate {
	text := in.text
	for _, i := range in.hits[backupCodeAnchor] {
		first, last, n := -1, -1, 0
		for p := i; p < len(text) && (first >= 0 && p < last+maxCodeGap || first < 0 && p < i+backupCodeSpan); {
			if !isASCIIWordByte(text[p]) {
				p++
				continue
			}
			e := p
			for e < len(text) && (isASCIIWordByte(text[e]) || text[e] == '-' && e+1 < len(text) && isASCIIWordByte(text[e+1])) {
				e++
			}
			if backupCode(text[p:e]) || recoveryKey(text[p:e]) {
				if first < 0 {
					first = p
				}
				last, n = e, n+1
			} else if first >= 0 {
				break
			}
			p = e
		}
		if n >= 2 || n == 1 && recoveryKey(text[first:last]) {
			out = append(out, candidate{Finding{"backup-codes", first, last}, rankContext})
		}
	}
	return out
}

// backupCode: four to six letters and digits with a digit, or two such
// halves joined by a dash ("7f3e9-a1c5b", "4821-7730"), or six to ten
// digits ("83920174").
func backupCode(w string) bool {
	if len(w) >= 6 && len(w) <= 10 && strings.Trim(w, digitChars) == "" {
		return true
	}
	for h := range strings.SplitSeq(w, "-") {
		if !codeGroup(h) || !strings.ContainsAny(h, digitChars) {
			return false
		}
	}
	return strings.Count(w, "-") <= 1
}

// codeGroup: four to six ASCII letters and digits, a group of a backup
// code or a recovery key.
func codeGroup(g string) bool { return len(g) >= 4 && len(g) <= 6 && strings.Trim(g, alnumChars) == "" }

const (
	digitChars = "0123456789"
	alnumChars = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)

// recoveryKey: one code of three or more dash-joined groups of four to
// six letters and digits, most with a digit ("K7QF-2MZP-9WTA-XR4D-6HNB"),
// the shape of an account's recovery key.
func recoveryKey(w string) bool {
	groups := strings.Split(w, "-")
	if len(groups) < 3 {
		return false
	}
	withDigit := 0
	for _, g := range groups {
		if !codeGroup(g) {
			return false
		}
		if strings.ContainsAny(g, digitChars) {
			withDigit++
		}
	}
	return 2*withDigit >= len(groups)
}

// An authenticator's secret is base32 (A–Z, 2–7), shown in groups of
// four or as one run, after the words that name it ("the 2fa setup key
// is KX4M Q7RZ 2VNA LT6P HW3D Y5GE").
var totpAnchor = anchor(true, "setup key", "secret key", "2fa key", "2fa secret", "totp", "authenticator key", "otp secret", "mfa secret",
	"mfa key", "einrichtungsschlüssel", "geheimer schlüssel", "セットアップキー", "설정 키", "密钥")

func findTOTP(in *input, out []candidate) []candidate {
	text := in.text
	for _, i := range in.hits[totpAnchor] {
		for p := i; p < min(len(text), i+backupCodeSpan); p++ {
			if !isBase32(text[p]) || p > 0 && isASCIIWordByte(text[p-1]) {
				continue
			}
			e, chars := p, 0
			for e < len(text) {
				k := e
				for k < len(text) && isBase32(text[k]) {
					k++
				}
				if k == e || k < len(text) && isASCIIWordByte(text[k]) {
					break
				}
				chars += k - e
				e = k
				if e+1 < len(text) && text[e] == ' ' && isBase32(text[e+1]) {
					e++
					continue
				}
				break
			}
			v := strings.TrimRight(text[p:e], " ")
			if chars >= 16 && hasLetterAndDigit(v) {
				out = append(out, candidate{Finding{"totp-secret", p, p + len(v)}, rankContext})
				break
			}
			p = max(p, e)
		}
	}
	return out
}

func isBase32(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '2' && c <= '7' }
