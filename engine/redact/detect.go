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

// input is the text a detector reads, with its ASCII letters lower-cased
// (same offsets) for the case-insensitive ones.
type input struct {
	text, lower string
	hits        [][]int // by anchor id (scanAnchors)
	// codeKeywordEnds: where findContext read a code keyword ("door
	// code"), in increasing order, so findCodes does not read it again.
	codeKeywordEnds []int
}

type detector func(in *input, out []candidate) []candidate

var detectors = []detector{findPEM, findProviders, findShaped, findCards, findContext, findCodes, findNear, findSpacedCodes, findCJKValues, findPairs, findFields, findTried, findCode,
	findSeeds, findBackupCodes, findTOTP, findAnswers, findLoneStrong, findEntropy}

// provider is a key format a provider documents: the prefix alone makes it
// a secret, so no context is needed. The pattern is matched only where
// one of its literal prefixes occurs (at a word start), which keeps a scan
// of megabytes fast. mixed asks the key for both a letter and a digit,
// which a random key has and "sk-this-is-a-placeholder" lacks.
type provider struct {
	kind   string
	anchor int            // its prefixes
	re     *regexp.Regexp // anchored at a prefix
	group  int
	mixed  bool
}

var providers = []provider{
	{"anthropic-key", anchor(false, "sk-ant-"), regexp.MustCompile(`^sk-ant-[A-Za-z0-9_-]{20,}`), 0, true},
	{"openai-key", anchor(false, "sk-"), regexp.MustCompile(`^sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`), 0, true},
	{"github-token", anchor(false, "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
		regexp.MustCompile(`^(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`), 0, true},
	{"gitlab-token", anchor(false, "glpat-"), regexp.MustCompile(`^glpat-[A-Za-z0-9_-]{20,}`), 0, true},
	{"npm-token", anchor(false, "npm_"), regexp.MustCompile(`^npm_[A-Za-z0-9]{30,}`), 0, true},
	{"huggingface-token", anchor(false, "hf_"), regexp.MustCompile(`^hf_[A-Za-z0-9]{30,}`), 0, true},
	{"aws-access-key", anchor(false, "AKIA", "ASIA", "ABIA", "ACCA"), regexp.MustCompile(`^(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b`), 0, false},
	{"slack-token", anchor(false, "xox", "xapp-"), regexp.MustCompile(`^(?:xox[abprse]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})`), 0, true},
	{"google-api-key", anchor(false, "AIza"), regexp.MustCompile(`^AIza[0-9A-Za-z_-]{35}`), 0, false},
	{"stripe-key", anchor(false, "sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
		regexp.MustCompile(`^(?:(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[A-Za-z0-9]{24,})`), 0, true},
	{"sendgrid-key", anchor(false, "SG."), regexp.MustCompile(`^SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{30,}`), 0, true},
	{"shopify-token", anchor(false, "shpat_", "shpss_", "shpca_", "shppa_"), regexp.MustCompile(`^shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}`), 0, true},
	{"digitalocean-token", anchor(false, "dop_v1_", "doo_v1_", "dor_v1_"), regexp.MustCompile(`^do[por]_v1_[a-f0-9]{64}`), 0, true},
	{"pypi-token", anchor(false, "pypi-AgE"), regexp.MustCompile(`^pypi-AgE[A-Za-z0-9_-]{50,}`), 0, true},
	{"mailgun-key", anchor(false, "key-"), regexp.MustCompile(`^key-[0-9a-f]{32}\b`), 0, true},
	{"square-token", anchor(false, "sq0atp-", "sq0csp-", "EAAA"), regexp.MustCompile(`^(?:sq0atp-[A-Za-z0-9_-]{22,}|sq0csp-[A-Za-z0-9_-]{40,}|EAAA[A-Za-z0-9_-]{60})`), 0, true},
	{"airtable-token", anchor(false, "pat"), regexp.MustCompile(`^pat[A-Za-z0-9]{14}\.[a-f0-9]{64}`), 0, true},
	{"braintree-token", anchor(false, "access_token$"), regexp.MustCompile(`^access_token\$(?:production|sandbox)\$[A-Za-z0-9]{16}\$[a-f0-9]{32}`), 0, true},
	{"vault-token", anchor(false, "hvs.", "hvb.", "hvr."), regexp.MustCompile(`^hv[sbr]\.[A-Za-z0-9_-]{24,}`), 0, true},
	{"terraform-token", anchor(false, ".atlasv1."), regexp.MustCompile(`^\.atlasv1\.[A-Za-z0-9_-]{60,}`), 0, true},
	// Twilio's API keys are SK and 32 hex digits (an account's SID, AC…,
	// names it and is no secret).
	{"twilio-key", anchor(false, "SK"), regexp.MustCompile(`^SK[0-9a-f]{32}\b`), 0, true},
	{"mapbox-token", anchor(false, "sk.eyJ"), regexp.MustCompile(`^sk\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`), 0, true},
	{"age-secret-key", anchor(false, "AGE-SECRET-KEY-1"), regexp.MustCompile(`^AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}`), 0, false},
	// Prefixes followed by a long random tail: a prefix alone could be a
	// word ("secret_", "pat"), the tail's length and mix of letters and
	// digits make it a key.
	{"provider-token", anchor(false, "lin_api_", "ntn_", "secret_", "ATATT3", "PMAK-", "glsa_", "glc_", "NRAK-", "sntrys_", "sntryu_",
		"sbp_", "dp.st.", "dp.ct.", "dp.sa.", "gsk_", "r8_", "pplx-", "xai-", "tskey-", "pscale_pw_", "pscale_tkn_", "figd_", "ATBB",
		"dt0c01.", "dapi", "fm2_", "FlyV1 ", "pul-", "glptt-", "glrt-", "gldt-", "rubygems_", "dckr_pat_", "sl.B", "shpca_", "lsv2_",
		"phc_", "phx_", "rnd_", "sk_live_", "fw_", "tvly-", "jina_", "nvapi-", "csk-"),
		regexp.MustCompile(`^(?:lin_api_|ntn_|secret_|ATATT3|PMAK-|glsa_|glc_|NRAK-|sntry[su]_|sbp_|dp\.(?:st|ct|sa)\.|gsk_|r8_|pplx-|xai-|` +
			`tskey-[a-z]+-|pscale_(?:pw|tkn)_|figd_|ATBB|dt0c01\.|dapi|fm2_|FlyV1 fm2_|pul-|glptt-|glrt-|gldt-|rubygems_|dckr_pat_|sl\.B|` +
			`lsv2_(?:pt|sk)_|phx_|rnd_|fw_|tvly-|jina_|nvapi-|csk-)[A-Za-z0-9_.=-]{20,}`), 0, true},
}

// maxTokenLen bounds how far past its prefix a key is looked for.
const maxTokenLen = 4096

func findProviders(in *input, out []candidate) []candidate {
	text := in.text
	for _, p := range providers {
		for _, i := range in.hits[p.anchor] {
			if i > 0 && isASCIIWordByte(text[i-1]) {
				continue
			}
			m := p.re.FindStringSubmatchIndex(text[i:min(len(text), i+maxTokenLen)])
			if m == nil {
				continue
			}
			s, e := i+m[2*p.group], i+m[2*p.group+1]
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
	jwtRE = regexp.MustCompile(`^eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`)
	// urlCredRE: scheme://user:password@ — only the password is the
	// secret (the user may be empty: redis://:pass@host). Matched from the
	// "://".
	urlCredRE = regexp.MustCompile(`^://[^\s:/@?#\[\]]*:([^\s/@?#]+)@`)
	// authRE: an Authorization header's credentials, or a bearer token;
	// matched on lower-cased text, the value read from the original.
	authRE = regexp.MustCompile(`^(?:bearer|authorization["']?\s*[:=]\s*["']?(?:basic|token|bearer)?)\s+([a-z0-9._~+/=-]{16,})`)
	// mysqlRE: a password on a MySQL command line, "-pSecret".
	mysqlRE = regexp.MustCompile(`^mysql(?:dump|admin)?\b[^\n]{0,200}?\s-p['"]?([^\s'"]{3,})`)
	// cliPassRE: the password flag of commands whose -p is the password
	// (sshpass, a registry login), quoted or not; "docker run -p 80:80"
	// is a port, so docker counts only with login.
	cliPassRE = regexp.MustCompile(`^(?:sshpass|(?:docker|podman|buildah|skopeo|oras|helm\s+registry|nerdctl)\s+login)\b[^\n|;&]{0,200}?` +
		`\s(?:-p|--password)(?:=|\s+)['"]?([^\s'"]{4,})`)
	// userPassRE: the password of a user:password flag (curl -u, wget
	// --user/--password, redis-cli -a, mongosh -p), read from the flag.
	userPassRE = regexp.MustCompile(`^(?:curl|wget|redis-cli|mongo|mongosh|psql|lftp|smbclient|rclone|https?)\b[^\n|;&]{0,200}?` +
		`\s(?:(?:-u|--user|-a|--auth)(?:=|\s+)['"]?[^\s:,'"]+[:,]|-a\s+|--pass(?:word)?(?:=|\s+)|-p\s+)['"]?([^\s'"]{4,})`)
	// sigParamRE: the signature of a pre-signed URL (Azure SAS sig=, S3
	// X-Amz-Signature=): whoever holds the URL holds the access.
	sigParamRE = regexp.MustCompile(`^[?&](?:sig|signature|x-amz-signature|x-goog-signature)=([A-Za-z0-9%+/=_-]{16,})`)
	// loginPairRE: "login for grafana is admin / Gr4fana!prod", "db creds
	// → u=reporting p=Rep0rt#2025": a user, then the password.
	loginPairRE = regexp.MustCompile(`^(?:logins?|creds|credentials|zugang|zugangsdaten|anmeldedaten|identifiants|credenciales|přihlašovací údaje|prihlasovaci udaje)(?:\s+(?:for|to|of|on|at|f[üu]r|zum|zur|pour|para|do|k)\s+[^\n:=/]{1,40}?)?(?:\s+(?:is|are|ist|sont|est|son|es|je|jsou)\b|\s*(?:[:=]|→|->))` +
		`\s*(?:u(?:ser)?=)?[^\s/:,]{1,64}\s*(?:/|:|,|\s+p(?:ass|w|wd)?=)\s*([^\s'"]{6,})`)
	// awsSecretRE: a 40-character AWS secret key after words naming it.
	awsSecretRE = regexp.MustCompile(`^aws.{0,12}secret.{0,16}?["']?\s*(?:[:=]|=>|\bis\b)\s*["']?([a-z0-9/+]{40})(?:[^a-z0-9/+=]|$)`)
	// slackHookRE: the secret part of a Slack incoming-webhook URL.
	slackHookRE = regexp.MustCompile(`^hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/([A-Za-z0-9]{16,})`)
	// discordHookRE: the token of a Discord webhook URL.
	discordHookRE = regexp.MustCompile(`^discord(?:app)?\.com/api/webhooks/[0-9]{5,}/([A-Za-z0-9_-]{40,})`)
	// teamsHookRE: the path of a Microsoft Teams (Office 365) incoming
	// webhook, whose ids and key are what lets anyone post.
	teamsHookRE = regexp.MustCompile(`^webhook\.office\.com/webhookb2/([A-Za-z0-9@/_-]{40,})`)
	// telegramRE: a bot token, "123456789:AA…", matched from its colon.
	telegramRE = regexp.MustCompile(`^:AA[A-Za-z0-9_-]{33}`)
)

// Anchors of the shaped secrets.
var (
	jwtAnchor       = anchor(false, "eyJ")
	urlAnchor       = anchor(false, "://")
	slackHookAnchor = anchor(false, "hooks.slack.com")
	telegramAnchor  = anchor(false, ":AA")
	teamsHookAnchor = anchor(false, "webhook.office.com/webhookb2/")
	mysqlAnchor     = anchor(true, "mysql")
	cliPassAnchor   = anchor(true, "sshpass", "docker", "podman", "buildah", "skopeo", "oras", "helm", "nerdctl")
	loginAnchor     = anchor(true, "login", "creds", "credentials", "zugang", "zugangsdaten", "anmeldedaten", "identifiants", "credenciales",
		"přihlašovací údaje", "prihlasovaci udaje")
	discordAnchor  = anchor(false, "discord.com/api/webhooks/", "discordapp.com/api/webhooks/")
	authAnchor     = anchor(true, "bearer", "authorization")
	awsAnchor      = anchor(true, "aws")
	userPassAnchor = anchor(true, "curl", "wget", "redis-cli", "mongo", "psql", "lftp", "smbclient", "rclone", "http -a", "http --auth",
		"https -a", "https --auth")
	sigParamAnchor = anchor(true, "?sig=", "&sig=", "?signature=", "&signature=", "&x-amz-signature=", "?x-amz-signature=",
		"&x-goog-signature=", "?x-goog-signature=")
)

// shapedWindow bounds how far past its anchor a shaped secret is read.
const shapedWindow = 4096

func findShaped(in *input, out []candidate) []candidate {
	text, lower := in.text, in.lower
	window := func(i int) string { return text[i:min(len(text), i+shapedWindow)] }
	for _, i := range in.hits[jwtAnchor] {
		if i > 0 && isASCIIWordByte(text[i-1]) {
			continue
		}
		if m := jwtRE.FindStringIndex(window(i)); m != nil && isJWT(text[i:i+m[1]]) {
			out = append(out, candidate{Finding{"jwt", i, i + m[1]}, rankShaped})
		}
	}
	for _, i := range in.hits[urlAnchor] {
		if m := urlCredRE.FindStringSubmatchIndex(window(i)); m != nil && !isPlaceholder(text[i+m[2]:i+m[3]]) {
			out = append(out, candidate{Finding{"url-password", i + m[2], i + m[3]}, rankShaped})
		} else if s, e := rawURLPassword(text, i); s < e {
			out = append(out, candidate{Finding{"url-password", s, e}, rankShaped})
		}
	}
	sub := func(re *regexp.Regexp, hay string, anchor int, kind string, check func(string) bool) {
		for _, i := range in.hits[anchor] {
			if i > 0 && isASCIIWordByte(hay[i-1]) {
				continue
			}
			m := re.FindStringSubmatchIndex(hay[i:min(len(hay), i+shapedWindow)])
			if m != nil && check(text[i+m[2]:i+m[3]]) {
				out = append(out, candidate{Finding{kind, i + m[2], i + m[3]}, rankShaped})
			}
		}
	}
	notPlaceholder := func(v string) bool { return !isPlaceholder(v) }
	sub(mysqlRE, lower, mysqlAnchor, "password", notPlaceholder)
	sub(cliPassRE, lower, cliPassAnchor, "password", notPlaceholder)
	sub(loginPairRE, lower, loginAnchor, "password", strongValue)
	sub(discordHookRE, text, discordAnchor, "discord-webhook", hasLetterAndDigit)
	sub(authRE, lower, authAnchor, "bearer-token", func(v string) bool { return hasLetterAndDigit(v) && !isPlaceholder(v) })
	sub(awsSecretRE, lower, awsAnchor, "aws-secret-key", hasLetterAndDigit)
	sub(userPassRE, lower, userPassAnchor, "password", notPlaceholder)
	for _, i := range in.hits[sigParamAnchor] {
		if m := sigParamRE.FindStringSubmatchIndex(text[i:min(len(text), i+shapedWindow)]); m != nil && hasLetterAndDigit(text[i+m[2]:i+m[3]]) {
			out = append(out, candidate{Finding{"url-signature", i + m[2], i + m[3]}, rankShaped})
		}
	}
	sub(slackHookRE, text, slackHookAnchor, "slack-webhook", notPlaceholder)
	for _, i := range in.hits[teamsHookAnchor] {
		if m := teamsHookRE.FindStringSubmatchIndex(window(i)); m != nil {
			out = append(out, candidate{Finding{"teams-webhook", i + m[2], i + m[3]}, rankShaped})
		}
	}
	for _, i := range in.hits[telegramAnchor] {
		digits := i
		for digits > 0 && text[digits-1] >= '0' && text[digits-1] <= '9' {
			digits--
		}
		// The Bot API's URLs put it after "/bot": ".../bot5920183746:AA…/sendMessage".
		if i-digits < 8 || i-digits > 10 || (digits > 0 && isASCIIWordByte(text[digits-1]) && !strings.HasSuffix(text[:digits], "/bot")) {
			continue
		}
		if m := telegramRE.FindStringIndex(window(i)); m != nil {
			out = append(out, candidate{Finding{"telegram-token", digits, i + m[1]}, rankProvider})
		}
	}
	return out
}

// urlUserRE: a URL's user name and the colon after it, from the "://".
var urlUserRE = regexp.MustCompile(`^://[^\s:/@?#\[\]]*:`)

// rawURLPassword finds a URL password that was not percent-encoded
// ("amqp://guest:R@bbit#2024@mq.local/", "mysql://root:a/b#c9@db/"): the
// password runs from the user's colon to the last "@" of the URL that a
// host name follows. A port and a path ("localhost:8080/@alice") are not a
// password. It returns the password's offsets, equal when there is none.
func rawURLPassword(text string, i int) (int, int) {
	m := urlUserRE.FindStringIndex(text[i:min(len(text), i+256)])
	if m == nil {
		return 0, 0
	}
	s := i + m[1]
	end := s
	// The run stops at the next URL, so runs never overlap.
	for end < len(text) && end-s < 256 && text[end] > ' ' && text[end] != '"' && text[end] != '\'' && text[end] != '<' && text[end] != '>' &&
		!strings.HasPrefix(text[end:], "://") {
		end++
	}
	at := strings.LastIndexByte(text[s:end], '@')
	if at <= 0 || s+at+1 >= end || !isASCIIWordByte(text[s+at+1]) {
		return 0, 0
	}
	pw := text[s : s+at]
	if isPlaceholder(pw) || strings.Contains(pw, "://") || portThenPath.MatchString(pw) {
		return 0, 0
	}
	return s, s + at
}

var portThenPath = regexp.MustCompile(`^[0-9]+(?:/|$)`)

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
		out = append(out, pemBlock{start, end, strings.HasSuffix(label, "PRIVATE KEY") || strings.HasSuffix(label, "PRIVATE KEY BLOCK") ||
			strings.HasPrefix(label, "OpenVPN Static key")})
		at = end
	}
}

const pemBodyChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\r\n\t :,.\\-"

func findPEM(in *input, out []candidate) []candidate {
	text := in.text
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
	if strings.Contains(v, "xxxxxxxx") || strings.Contains(v, "XXXXXXXX") { // "SG.xxxxxxxx.xxxxxxxx"
		return true
	}
	if strings.Contains(v, "***") || strings.Contains(v, "•") || strings.Contains(v, "...") || strings.Contains(v, "…") {
		return true // masked: "sk-****3f9a", "•••••"
	}
	if strings.HasSuffix(v, "(") || strings.HasSuffix(v, "()") {
		return true // a call that fetches it: "getpass()", "input("
	}
	l := strings.ToLower(v)
	// Code, not a value: a call ("getpass.getpass(", "Read-Host"), a
	// variable named for the secret ("ro_password", "get_secret_value").
	if looksLikeCall(l) || strings.HasPrefix(l, "read-host") || snakeNamed(l) {
		return true
	}
	if containsAny(l, passwordHashMarks) || hasAnyPrefix(l, secretReferences) || containsAny(l, placeholderWords) || containsAny(l, passwordManagers) {
		return true
	}
	switch strings.Trim(l, "_-)\"'?!.") {
	case "password", "passwd", "pass", "pwd", "secret", "token", "apikey", "api_key", "api-key", "key", "xxx", "none", "null", "nil",
		"hidden", "masked", "tbd", "todo", "n/a", "user", "username", "changeit", "changeme", "change_me", "change-me",
		"yes", "no", "true", "false", "on", "off", "dummy", "fake", "foo", "bar", "foobar", "test", "testing", "demo",
		// The examples every password advice cites, public by now.
		"password1", "password123", "123456", "12345678", "qwerty", "letmein", "iloveyou":
		return true
	}
	return false
}

var (
	// passwordHashMarks: a hash of a password is stored where the password
	// is not: "$2y$10$…" (bcrypt), "{SSHA}…", an algorithm's name.
	passwordHashMarks = []string{"$2a$", "$2b$", "$2y$", "$argon2", "$pbkdf2", "$6$", "$5$", "$1$", "{ssha}", "{sha}", "pbkdf2_", "bcrypt", "argon2"}
	// secretReferences start a reference to where the secret is kept:
	// Terraform's "var.db_password", Home Assistant's "!secret
	// mqtt_password", "op://vault/item".
	secretReferences = []string{"var.", "local.", "data.", "module.", "!secret", "!vault", "op://", "vault:", "ref+", "arn:", "secretkeyref"}
	placeholderWords = []string{"your", "here", "example", "placeholder", "redacted", "process.env", "os.environ", "getenv", "secrets."}
	// passwordManagers are named where their vault is meant: "密码都放在
	// 1Password 里了".
	passwordManagers = []string{"1password", "bitwarden", "lastpass", "keepass", "keepassxc", "dashlane", "keychain", "nordpass", "proton pass"}
)

// hasAnyPrefix reports whether s starts with one of prefixes.
func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// snakeNamed: a snake_case name with a secret's word in it ("ro_password",
// "get_secret_value", "api_token_env"): a variable, not its value.
func snakeNamed(l string) bool {
	if !strings.Contains(l, "_") || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return false
	}
	for part := range strings.SplitSeq(l, "_") {
		if len(strings.Trim(part, "0123456789")) < 2 {
			return false // "storepass_2931": a value with a number in it
		}
	}
	for _, w := range []string{"pass", "secret", "token", "key", "pwd", "cred"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// looksLikeCall: a function or method called ("getpass.getpass(",
// "boto3.client(", "mysqli_connect("): a name before "(" with a dot in it,
// or of four letters or underscores at least; a random key's "(" follows
// letters and digits mixed.
func looksLikeCall(l string) bool {
	for at := 0; ; {
		k := strings.IndexByte(l[at:], '(')
		if k < 0 {
			return false
		}
		k += at
		s := k
		for s > 0 && (isASCIIWordByte(l[s-1]) || l[s-1] == '.') {
			s--
		}
		name := l[s:k]
		if strings.Contains(name, ".") && len(name) >= 4 || len(name) >= 4 && strings.Trim(name, "abcdefghijklmnopqrstuvwxyz_") == "" {
			return true
		}
		at = k + 1
	}
}
