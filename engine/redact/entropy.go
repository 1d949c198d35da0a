package redact

import (
	"encoding/base64"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A long token of random characters is taken for a credential without any
// keyword: a key pasted alone ("here: Zq8…") or from a provider this
// package has no pattern for.
//
// minEntropyLen: below 32 characters the entropy of a string says little,
// and order numbers, tracking numbers and short ids live there.
//
// minEntropyBits is the Shannon entropy (bits per character, counted over
// the token itself) a token must reach. Of 10,000 random tokens of 32
// characters, those from [A-Za-z0-9] measured 4.20–4.81 (1st to 99th
// percentile), those from [a-z0-9] 3.89–4.58 (a longer token measures
// more); base64 of ordinary text stays near 4.0 at that length and is
// decoded and checked besides. 4.1 keeps 99% of the first kind and most of
// the second. Long identifiers measure 3.8–4.3
// ("AbstractSingletonProxyFactoryBeanProvider2": 4.20): the entropy does
// not keep them out, the other conditions do (two digits at least, letter
// and digit classes changing throughout the token); hex (git SHAs,
// checksums) is left out before the entropy is looked at.
const (
	minEntropyLen  = 32
	minEntropyBits = 4.1
)

// digestWords announce a hash, a public key or an address, which are not
// secrets: "commit 3f2a…", "sha256: …", "integrity sha512-…", "age public
// key: age1…", "bitcoin address 1Boat…".
var digestWords = []string{"commit", "sha", "hash", "checksum", "digest", "integrity", "fingerprint", "revision", "ssh-rsa",
	"ssh-ed25519", "ecdsa-", "base64,", "etag", "nonce", "build", "version", "blob", "tree", "cid", "ipfs",
	"public key", "publickey", "pubkey", "npub1", "age1", "public", "address", "wallet", "adresse", "dirección", "adresa", "地址", "アドレス", "주소"}

// publicContexts, just before a token, make it a public key or a peer's:
// a JWKS modulus, a DKIM record, "wg show".
var publicContexts = []string{"kty", "jwks", "\"n\":", "modulus", "peer:", "dkim"}

// publicKeyHeaders begin the DER of an RSA public key in base64.
var publicKeyHeaders = []string{"MIIBIjANBgkqhkiG9w0BAQEFAAOC", "MIICIjANBgkqhkiG9w0BAQEFAAOC"}

// publicForms mark identifiers their providers publish by design: Stripe's
// publishable keys and Google's OAuth client ids.
var publicForms = []string{"pk_live_", "pk_test_", ".apps.googleusercontent.com"}

func findEntropy(in *input, out []candidate) []candidate {
	text := in.text
	var safe []pemBlock
	if strings.Contains(text, "-----BEGIN ") {
		safe = pemBlocks(text)
	}
	for i := 0; i < len(text); {
		if !isTokenByte(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isTokenByte(text[j]) {
			j++
		}
		// A run with slashes is a key when it is random as a whole and no
		// segment of it is a word (base64 holds "/"); else it is a path,
		// whose segments are names, each judged alone.
		if strings.IndexByte(text[i:j], '/') >= 0 && !hasWordSegment(text[i:j]) && randomToken(text, i, j, safe) {
			out = append(out, candidate{Finding{"high-entropy", i, j}, rankEntropy})
			i = j
			continue
		}
		for s := i; s < j; {
			e := s
			for e < j && text[e] != '/' {
				e++
			}
			if e-s >= minEntropyLen && randomToken(text, s, e, safe) {
				out = append(out, candidate{Finding{"high-entropy", s, e}, rankEntropy})
			}
			s = e + 1
		}
		i = j
	}
	return out
}

// hasWordSegment: some segment of a slashed run is letters only ("src",
// "components", "UserProfile"), as in a path.
func hasWordSegment(run string) bool {
	for seg := range strings.SplitSeq(run, "/") {
		if seg != "" && strings.Trim(seg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-.") == "" {
			return true
		}
	}
	return false
}

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' || c == '_' || c == '-'
}

// randomToken judges text[s:e], a run of token characters.
func randomToken(text string, s, e int, safe []pemBlock) bool {
	tok := strings.Trim(text[s:e], "-_=+")
	if len(tok) < minEntropyLen {
		return false
	}
	var lower, upper, digit, hex, seps int
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case c >= 'a' && c <= 'z':
			lower++
		case c >= 'A' && c <= 'Z':
			upper++
		case c >= '0' && c <= '9':
			digit++
		case c == '-' || c == '_':
			seps++
		}
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-' {
			hex++
		}
	}
	switch {
	case hex == len(tok): // git SHAs, UUIDs, checksums
		return false
	case digit < 2 || lower+upper < 8:
		return false
	case seps >= 3 && len(tok)/(seps+1) < 10: // a slug: my-long-branch-name-2024
		return false
	case classChanges(tok)*8 < len(tok): // "thequickbrownfox…1234567890": blocks, not a mix
		return false
	case entropy(tok) < minEntropyBits:
		return false
	case decodesToText(tok):
		return false
	}
	for _, b := range safe {
		if s >= b.start && e <= b.end {
			return false // a certificate or public key
		}
	}
	word := wordAround(text, s, e)
	if strings.Contains(word, "://") || strings.HasPrefix(word, "/") || strings.HasPrefix(word, "~") || strings.HasPrefix(word, ".") ||
		(len(word) > 2 && word[1] == ':' && word[2] == '\\') {
		return false // part of a URL or a path
	}
	// The words before the token and before the word holding it: a
	// slash splits "sha512-…/…/…" into tokens far from "integrity".
	from := max(0, s-maxTokenLen)
	ws := from + strings.LastIndexFunc(text[from:s], unicode.IsSpace) + 1
	before := strings.ToLower(text[max(0, s-24):s] + " " + text[max(0, ws-24):ws])
	for _, p := range publicForms {
		if strings.Contains(word, p) {
			return false
		}
	}
	// An inline image, a module checksum ("h1:…="), a DKIM or RSA public
	// key ("p=MIIBIjANBgkqh…", the DER header of a public key), a peer's
	// key in "wg show", an id assigned to a name ending in "_id".
	lw := strings.ToLower(word)
	if strings.Contains(lw, "base64,") || strings.HasPrefix(lw, "h1:") || strings.HasPrefix(lw, "$2") || containsAny(before, publicContexts) ||
		containsAny(word, publicKeyHeaders) || strings.Contains(before, "_id") && !strings.Contains(before, "secret_id") {
		return false
	}
	for _, w := range digestWords {
		if strings.Contains(before, w) || strings.HasPrefix(strings.ToLower(tok), w) {
			return false
		}
	}
	return true
}

// wordAround is the whitespace-delimited word holding text[s:e].
func wordAround(text string, s, e int) string {
	for s > 0 {
		r, size := utf8.DecodeLastRuneInString(text[:s])
		if unicode.IsSpace(r) || strings.ContainsRune(`"'(<[{`, r) {
			break
		}
		s -= size
	}
	for e < len(text) {
		r, size := utf8.DecodeRuneInString(text[e:])
		if unicode.IsSpace(r) || strings.ContainsRune(`"')>]}`, r) {
			break
		}
		e += size
	}
	return text[s:e]
}

// classChanges counts the places where s goes from one of lower case,
// upper case and digits to another: in a random token they are mixed
// throughout (about one change in four characters for [A-Za-z0-9]).
func classChanges(s string) int {
	n, prev := 0, 0
	for i := 0; i < len(s); i++ {
		c, cl := s[i], 0
		switch {
		case c >= 'a' && c <= 'z':
			cl = 1
		case c >= 'A' && c <= 'Z':
			cl = 2
		case c >= '0' && c <= '9':
			cl = 3
		}
		if cl != 0 && prev != 0 && cl != prev {
			n++
		}
		if cl != 0 {
			prev = cl
		}
	}
	return n
}

// entropy is the Shannon entropy of s's bytes, in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h, n := 0.0, float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// decodesToText reports base64 of ordinary text ("aGVsbG8gd29ybGQ…"), as
// opposed to base64 of random bytes: a key.
func decodesToText(tok string) bool {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		raw, err := enc.DecodeString(tok)
		if err != nil {
			continue
		}
		if !utf8.Valid(raw) {
			return false
		}
		printable := 0
		for _, r := range string(raw) {
			if unicode.IsPrint(r) || unicode.IsSpace(r) {
				printable++
			}
		}
		return printable*10 >= utf8.RuneCount(raw)*9
	}
	return false
}
