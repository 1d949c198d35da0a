package redact

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
)

// candidate is a finding before overlaps are settled: the lower rank wins.
type candidate struct {
	Finding
	rank int
}

// Ranks, most specific first.
const (
	rankPrivateKey = iota
	rankProvider
	rankShaped // JWT, URL credentials, Authorization headers
	rankContext
	rankEntropy
)

type detector func(text string, out []candidate) []candidate

var detectors = []detector{findPEM, findProviders, findShaped, findContext, findEntropy}

// provider is a key format a provider documents: the prefix alone makes it
// a secret, so no context is needed. mixed asks the body for both a letter
// and a digit, which a random key has and "sk-this-is-a-placeholder" lacks.
type provider struct {
	kind  string
	re    *regexp.Regexp
	group int
	mixed bool
}

var providers = []provider{
	{"anthropic-key", regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{20,}`), 0, true},
	{"openai-key", regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`), 0, true},
	{"github-token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`), 0, true},
	{"gitlab-token", regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`), 0, true},
	{"npm-token", regexp.MustCompile(`\bnpm_[A-Za-z0-9]{30,}`), 0, true},
	{"huggingface-token", regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`), 0, true},
	{"aws-access-key", regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b`), 0, false},
	{"aws-secret-key", regexp.MustCompile(`(?i)aws.{0,12}secret.{0,16}?["']?\s*(?:[:=]|=>|\bis\b)\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`), 1, true},
	{"slack-token", regexp.MustCompile(`\b(?:xox[abprse]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})`), 0, true},
	{"slack-webhook", regexp.MustCompile(`hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/([A-Za-z0-9]{16,})`), 1, false},
	{"google-api-key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), 0, false},
	{"stripe-key", regexp.MustCompile(`\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|\bwhsec_[A-Za-z0-9]{24,}`), 0, true},
	{"sendgrid-key", regexp.MustCompile(`\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{30,}`), 0, true},
	{"shopify-token", regexp.MustCompile(`\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}`), 0, true},
	{"digitalocean-token", regexp.MustCompile(`\bdo[por]_v1_[a-f0-9]{64}`), 0, true},
	{"pypi-token", regexp.MustCompile(`\bpypi-AgE[A-Za-z0-9_-]{50,}`), 0, true},
	{"telegram-token", regexp.MustCompile(`\b[0-9]{8,10}:AA[A-Za-z0-9_-]{33}`), 0, true},
}

func findProviders(text string, out []candidate) []candidate {
	for _, p := range providers {
		for _, m := range p.re.FindAllStringSubmatchIndex(text, -1) {
			s, e := m[2*p.group], m[2*p.group+1]
			if p.kind == "openai-key" && strings.HasPrefix(text[s:], "sk-ant-") {
				continue
			}
			if p.mixed && !hasLetterAndDigit(text[s:e]) {
				continue
			}
			out = append(out, candidate{Finding{p.kind, s, e}, rankProvider})
		}
	}
	return out
}

var (
	jwtRE = regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`)
	// urlCredRE: scheme://user:password@ — only the password is the secret.
	urlCredRE = regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@?#\[\]]+:([^\s/@?#]+)@`)
	// authRE: an Authorization header's credentials, or a bearer token.
	// mysqlRE: a password on a MySQL command line, "-pSecret".
	mysqlRE = regexp.MustCompile(`\bmysql(?:dump|admin)?\b[^\n]*?\s-p([^\s'"]{3,})`)
	authRE  = regexp.MustCompile(`(?i)(?:\bbearer|authorization["']?\s*[:=]\s*["']?(?:basic|token|bearer)?)\s+([A-Za-z0-9._~+/=-]{16,})`)
)

func findShaped(text string, out []candidate) []candidate {
	for _, m := range jwtRE.FindAllStringIndex(text, -1) {
		if isJWT(text[m[0]:m[1]]) {
			out = append(out, candidate{Finding{"jwt", m[0], m[1]}, rankShaped})
		}
	}
	for _, m := range urlCredRE.FindAllStringSubmatchIndex(text, -1) {
		if !isPlaceholder(text[m[2]:m[3]]) {
			out = append(out, candidate{Finding{"url-password", m[2], m[3]}, rankShaped})
		}
	}
	for _, m := range mysqlRE.FindAllStringSubmatchIndex(text, -1) {
		if !isPlaceholder(text[m[2]:m[3]]) {
			out = append(out, candidate{Finding{"password", m[2], m[3]}, rankShaped})
		}
	}
	for _, m := range authRE.FindAllStringSubmatchIndex(text, -1) {
		if v := text[m[2]:m[3]]; hasLetterAndDigit(v) && !isPlaceholder(v) {
			out = append(out, candidate{Finding{"bearer-token", m[2], m[3]}, rankShaped})
		}
	}
	return out
}

// isJWT: a JWT's first part is base64url JSON naming its algorithm.
func isJWT(tok string) bool {
	head, _, _ := strings.Cut(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(head, "="))
	if err != nil {
		return false
	}
	var h map[string]any
	if json.Unmarshal(raw, &h) != nil {
		return false
	}
	_, ok := h["alg"]
	return ok
}

// pemBlock is one "-----BEGIN X-----" block: [start, end) and whether X
// is a private key.
type pemBlock struct {
	start, end int
	private    bool
}

// pemBlocks finds PEM blocks. A block without its END line (a key cut
// short) runs on over the characters a PEM body is made of.
func pemBlocks(text string) []pemBlock {
	var out []pemBlock
	for at := 0; ; {
		i := strings.Index(text[at:], "-----BEGIN ")
		if i < 0 {
			return out
		}
		start := at + i
		rest := text[start+len("-----BEGIN "):]
		j := strings.Index(rest, "-----")
		if j < 0 || j > 60 {
			at = start + len("-----BEGIN ")
			continue
		}
		label := rest[:j]
		bodyAt := start + len("-----BEGIN ") + j + len("-----")
		end := bodyAt
		endLine := "-----END " + label + "-----"
		if k := strings.Index(text[bodyAt:], endLine); k >= 0 {
			end = bodyAt + k + len(endLine)
		} else {
			for end < len(text) && strings.IndexByte(pemBodyChars, text[end]) >= 0 {
				end++
			}
		}
		out = append(out, pemBlock{start, end, strings.HasSuffix(label, "PRIVATE KEY") || strings.HasSuffix(label, "PRIVATE KEY BLOCK")})
		at = end
	}
}

const pemBodyChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\r\n\t :,.\\-"

func findPEM(text string, out []candidate) []candidate {
	if !strings.Contains(text, "-----BEGIN ") {
		return out
	}
	for _, b := range pemBlocks(text) {
		if b.private {
			out = append(out, candidate{Finding{"private-key", b.start, b.end}, rankPrivateKey})
		}
	}
	return out
}

func hasLetterAndDigit(s string) bool {
	letter, digit := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		}
	}
	return letter && digit
}

// isPlaceholder reports a value that stands for a secret without being
// one: "<password>", "${DB_PASSWORD}", "$TOKEN", "****", "your-api-key",
// "%s", "{{ secrets.X }}".
func isPlaceholder(v string) bool {
	if v == "" {
		return true
	}
	switch v[0] {
	case '<', '$', '%', '{', '(', '[':
		return true
	}
	if strings.Count(v, v[:1]) == len(v) { // "****", "xxxxxxxx"
		return true
	}
	l := strings.ToLower(v)
	for _, w := range []string{"your", "here", "example", "placeholder", "redacted", "process.env", "os.environ", "getenv", "secrets."} {
		if strings.Contains(l, w) {
			return true
		}
	}
	switch strings.Trim(l, "_-") {
	case "password", "passwd", "pass", "pwd", "secret", "token", "apikey", "api_key", "api-key", "key", "xxx", "none", "null", "nil",
		"hidden", "masked", "tbd", "todo", "n/a", "user", "username", "changeit":
		return true
	}
	return false
}
