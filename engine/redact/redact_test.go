package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/clawmem/clawmem/schemas"
)

// Fake credentials shaped like real ones; FAKE marks them as such.
const (
	fakeOpenAI = "sk-proj-FAKEa1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
	fakeGitHub = "ghp_FAKE1234567890abcdefGHIJKLmnopqrstuv"
	fakeAWS    = "AKIAFAKE2345ABCD6789"
)

func TestRedact(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"the rest of the text stays", "my db password is hunter2!! and I use postgres", "my db password is [REDACTED:password] and I use postgres"},
		{"a secret at the start", fakeOpenAI + " is the key", "[REDACTED:openai-key] is the key"},
		{"a secret at the end", "the key is " + fakeGitHub, "the key is [REDACTED:github-token]"},
		{"the whole text", fakeAWS, "[REDACTED:aws-access-key]"},
		{"the provider format wins over the keyword", "password: " + fakeOpenAI, "password: [REDACTED:openai-key]"},
		{"two secrets", "key " + fakeAWS + " and token " + fakeGitHub, "key [REDACTED:aws-access-key] and token [REDACTED:github-token]"},
		{"only the URL's password", "postgres://app:Xk29fPq8m@db:5432/app", "postgres://app:[REDACTED:url-password]@db:5432/app"},
		{"the whole PEM block", "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEFAKEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\nbye",
			"key:\n[REDACTED:private-key]\nbye"},
		{"a PEM block cut short", "-----BEGIN PRIVATE KEY-----\nMIIEFAKEvQIBADANBgkq\nhkiG9w0BAQEFAASC", "[REDACTED:private-key]"},
		{"nothing to redact", "I changed my password yesterday", "I changed my password yesterday"},
		{"a short keyword inside a word", "the spin is 4821 rpm", "the spin is 4821 rpm"},
		{"a PIN", "my PIN is 4821", "my PIN is [REDACTED:password]"},
		{"a marker is not redacted again", "password is [REDACTED:password]", "password is [REDACTED:password]"},
		{"in Japanese", "パスワードはsakura2024です", "パスワードは[REDACTED:password]です"},
		{"invalid UTF-8 around a secret", "\xff\xfe " + fakeGitHub + " \xc3", "\xff\xfe [REDACTED:github-token] \xc3"},
		{"an unencoded URL password with # and @", "amqp://guest:R@bbitFAKE#24@mq.local:5672/", "amqp://guest:[REDACTED:url-password]@mq.local:5672/"},
		{"a port and a path are no password", "see http://localhost:8080/users/@alice", "see http://localhost:8080/users/@alice"},
		{"a door code", "the keypad code to the lab is 1357#", "the keypad code to the lab is [REDACTED:password]"},
		{"a door code without its value", "door code changes 4417 times", "door code changes 4417 times"},
		{"a door code without a separator", "Türcode 4711", "Türcode [REDACTED:password]"},
		{"pw after a word takes only a strong value", "wifi pw is Kz7#FAKE-Dust; pw is fine", "wifi pw is [REDACTED:password]; pw is fine"},
		{"another copula", "le mot de passe c'est Chaton#FAKE42", "le mot de passe c'est [REDACTED:password]"},
		{"a user then a password", "login for grafana is admin / Gr4fana!FAKE", "login for grafana is admin / [REDACTED:password]"},
		{"a bare key with a hex value", "the key is 0123456789abcdef0123456789abcdef", "the key is [REDACTED:api-key]"},
		{"a public key is no secret", "public key: 0123456789abcdef0123456789abcdef", "public key: 0123456789abcdef0123456789abcdef"},
		{"a Mailgun key", "key-0123456789abcdef0123456789abcdef", "[REDACTED:mailgun-key]"},
		{"a registry login", "docker login -u ci -p D0ckerFAKE! reg.io", "docker login -u ci -p [REDACTED:password] reg.io"},
		{"a docker port is no password", "docker run -p 8080:80 nginx", "docker run -p 8080:80 nginx"},
		{"a code named by its device", "the alarm panel master code is 70913", "the alarm panel master code is [REDACTED:password]"},
		{"a locker is no device", "my gym locker code is 4471", "my gym locker code is 4471"},
		{"a code that is a count", "the safe code is 2000 lines", "the safe code is 2000 lines"},
		{"a lock's combination", "remember: safe combo 24-11-37", "remember: safe combo [REDACTED:password]"},
		{"words between keyword and separator", "Mot de passe provisoire : Provis0ire!", "Mot de passe provisoire : [REDACTED:password]"},
		{"a compound is another thing", "my password manager is 1Password", "my password manager is 1Password"},
		{"a masked key", "api key: sk-****************3f9a", "api key: sk-****************3f9a"},
		{"empty", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, fs := Redact(c.in)
			if got != c.want {
				t.Errorf("Redact(%q) = %q, want %q (findings %v)", c.in, got, c.want, fs)
			}
			if again, _ := Redact(got); again != got {
				t.Errorf("not idempotent: %q then %q", got, again)
			}
		})
	}
}

// TestLessonSecrets: the cases distillation's own filter was held to
// before this package replaced it.
func TestLessonSecrets(t *testing.T) {
	cases := []struct {
		text string
		want bool
	}{
		{"The OpenAI key is sk-proj-abcdefghijklmnopqrstuvwx1234", true},
		{"AWS key AKIAIOSFODNN7EXAMPLE leaked", true},
		{"use AIzaSyA1234567890abcdefghijklmnopqrstuv for maps", true},
		{"token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", true},
		{"-----BEGIN OPENSSH PRIVATE KEY-----", true},
		{"connect to postgres://blog:hunter2pass@db:5432/blog", true},
		{"set password=correct-horse-battery", true},
		{"Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", true},
		{"Set the API key in ${OPENAI_API_KEY}, never in the config file.", false},
		{"The password reset flow sends an email.", false},
		{"postgres://db:5432/blog needs no credentials in the URL", false},
		{"Use sk-learn? No: scikit-learn.", false},
	}
	for _, c := range cases {
		if got := len(Find(c.text)) > 0; got != c.want {
			t.Errorf("Find(%q) found a secret: %v, want %v", c.text, got, c.want)
		}
	}
}

func TestFindSortedWithoutOverlaps(t *testing.T) {
	text := "a " + fakeGitHub + " b password=" + fakeOpenAI + " c postgres://u:Pw_123456@h/db d api_key=" + fakeAWS
	fs := Find(text)
	if len(fs) != 4 {
		t.Fatalf("Find found %d, want 4: %v", len(fs), fs)
	}
	for i, f := range fs {
		if f.Start >= f.End || f.End > len(text) {
			t.Errorf("finding %d has offsets %d..%d", i, f.Start, f.End)
		}
		if i > 0 && f.Start < fs[i-1].End {
			t.Errorf("findings %d and %d overlap: %v", i-1, i, fs)
		}
	}
	kinds := Kinds(fs)
	if kinds != "github-token, openai-key, url-password, aws-access-key" {
		t.Errorf("kinds %q", kinds)
	}
}

// TestHugeInput: a few megabytes, with secrets in them, and inputs built
// to make a backtracking matcher slow, or holding a hundred thousand
// secrets (whose overlaps must be settled without comparing each pair),
// finish in linear time and find every secret.
func TestHugeInput(t *testing.T) {
	filler := strings.Repeat("the quick brown fox jumps over the lazy dog; ", 2000)
	var b strings.Builder
	for range 40 {
		b.WriteString(filler)
		b.WriteString(fakeGitHub + " ")
	}
	inputs := map[string]int{
		"prose with keys":      40,
		"password is, again":   0,
		"one endless token":    0,
		"BEGIN without an end": 1,
		"URL after URL":        100000,
		"public key is, again": 0,
		"code without an end":  0,
	}
	texts := map[string]string{
		"prose with keys":      b.String(),
		"password is, again":   strings.Repeat("password is password is ", 25000),
		"one endless token":    strings.Repeat("a", 3<<20),
		"BEGIN without an end": "-----BEGIN PRIVATE KEY-----" + strings.Repeat("ABCD", 1<<19),
		"URL after URL":        strings.Repeat("x://u:p#@x", 100000),
		"public key is, again": strings.Repeat("public key is door code is ", 40000),
		"code without an end":  strings.Repeat("code", 1<<19),
	}
	for name, want := range inputs {
		start := time.Now()
		fs := Find(texts[name])
		took := time.Since(start)
		if len(fs) != want {
			t.Errorf("%s: %d findings, want %d", name, len(fs), want)
		}
		if took > 20*time.Second {
			t.Errorf("%s: %d bytes took %s", name, len(texts[name]), took)
		}
		t.Logf("%s: %d bytes in %s", name, len(texts[name]), took.Round(time.Millisecond))
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeRedact, "redact": ModeRedact, "REFUSE": ModeRefuse, " off ": ModeOff} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("mask"); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("ParseMode(mask): %v, want an invalid-input error", err)
	}
}

func TestApply(t *testing.T) {
	text := "my token is " + fakeGitHub
	got, fs, err := Apply(ModeRedact, text)
	if err != nil || got != "my token is [REDACTED:github-token]" || len(fs) != 1 {
		t.Errorf("redact: %q, %v, %v", got, fs, err)
	}
	_, _, err = Apply(ModeRefuse, text)
	if !errors.Is(err, ErrSecret) || !errors.Is(err, schemas.ErrInvalid) {
		t.Fatalf("refuse: %v, want ErrSecret (an input error)", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "github-token") || !strings.Contains(msg, "secrets.mode is refuse") || strings.Contains(msg, fakeGitHub) {
		t.Errorf("refuse error %q: want the kind and the mode, never the secret", msg)
	}
	if got, fs, err := Apply(ModeRefuse, "no secret here"); err != nil || got != "no secret here" || fs != nil {
		t.Errorf("refuse without a secret: %q, %v, %v", got, fs, err)
	}
	if got, fs, err := Apply(ModeOff, text); err != nil || got != text || fs != nil {
		t.Errorf("off: %q, %v, %v", got, fs, err)
	}
}

func TestRedactJSON(t *testing.T) {
	cases := []struct {
		name, in, want string
		n              int
	}{
		{"values, not keys", `{"password":"hunter2!!","n":1.50,"list":["` + fakeGitHub + `",2,null,true]}`,
			`{"password":"[REDACTED:password]","n":1.50,"list":["[REDACTED:github-token]",2,null,true]}`, 2},
		{"a key that holds a secret stays", `{"` + fakeGitHub + `": 1}`, `{"` + fakeGitHub + `": 1}`, 0},
		{"escapes in the string", `{"text":"line\nkey \u0041KIAFAKE2345ABCD6789 \"q\" <b>"}`,
			`{"text":"line\nkey [REDACTED:aws-access-key] \"q\" <b>"}`, 1},
		{"unchanged bytes when clean", "{ \"a\" : \"b\",\n  \"c\": [1e3] }", "{ \"a\" : \"b\",\n  \"c\": [1e3] }", 0},
		{"a bare string", `"token: ` + fakeOpenAI + `"`, `"token: [REDACTED:openai-key]"`, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, n, err := RedactJSON([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want || n != c.n {
				t.Errorf("RedactJSON = %s (%d), want %s (%d)", got, n, c.want, c.n)
			}
			if !json.Valid(got) {
				t.Errorf("output is not JSON: %s", got)
			}
		})
	}
	for _, bad := range []string{"", "{", `{"a":}`, `{"a":"b"} x`, "\xff"} {
		if _, _, err := RedactJSON([]byte(bad)); !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("RedactJSON(%q): %v, want an invalid-input error", bad, err)
		}
	}
}

// checkRedaction holds Redact to its promises on in.
func checkRedaction(t *testing.T, in string) {
	out, fs := Redact(in)
	if utf8.ValidString(in) && !utf8.ValidString(out) {
		t.Fatalf("Redact(%q) = %q: not valid UTF-8", in, out)
	}
	// The markers themselves may hold a short secret's letters ("assw" of
	// "[REDACTED:password]"): look for survivors outside them.
	bare := out
	for _, f := range fs {
		bare = strings.ReplaceAll(bare, Marker(f.Kind), "\x00")
	}
	for _, f := range fs {
		if f.Start < 0 || f.End > len(in) || f.Start >= f.End {
			t.Fatalf("Redact(%q): finding %v out of range", in, f)
		}
		secret := in[f.Start:f.End]
		if strings.Count(in, secret) == 1 && strings.Contains(bare, secret) {
			t.Fatalf("Redact(%q) = %q: %q survives", in, out, secret)
		}
	}
	if again, more := Redact(out); again != out {
		t.Fatalf("Redact not idempotent: %q → %q → %q (%v)", in, out, again, more)
	}
}

func FuzzRedact(f *testing.F) {
	for _, s := range []string{"my db password is hunter2!! and I use postgres", fakeOpenAI, "postgres://a:b1234@h/x", "Passwort ist Sommer2023!",
		"-----BEGIN EC PRIVATE KEY-----\nabc\n-----END EC PRIVATE KEY-----", "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
		"密码是abc12345", "token=" + fakeGitHub + "&x=1", "\xff password: \xfe1234", "card 4111 7283 9911 2345 cvv 417",
		"backup codes: 4821-7730, 9915-2064", "seed: canyon drift elbow ivory maple noble pistol quarter rescue sugar thunder violin",
		"PASSWORD\nPurpleMoose#2210", "use hunter2024!? to log in", "unlock with Ostrich-Marmalade-4", "금고 비번 알려줄게 2-7-1-9-0-4",
		"临时密码给你：Tmp#8841xy，明天", "security question: Pickles", "totp KX4M Q7RZ 2VNA LT6P", "a:5432:b:c:Tm9!vq2L",
		"echo Fj2kq8PzW1nV | docker login --password-stdin", "admin／Yuzu_Ponzu55", "try Sommer2024!! now", "<password>Qm9!wr</password>",
		"WIFI:T:WPA;S:x;P:fern-9921;;", `AuthTokens.basic("neo4j", "Lichen-Otter-7741")`, "IDENTIFIED BY 'Birch_5512'", "u:Yx2!pL@tcp(h)",
		"the password is my dog's name. it's Bruno1987"} {
		f.Add(s)
	}
	f.Fuzz(checkRedaction)
}

func FuzzRedactJSON(f *testing.F) {
	for _, s := range []string{`{"password":"hunter2!!"}`, `["` + fakeGitHub + `", 1, {"a": "b"}]`, `"x"`, `{"a":"\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		out, n, err := RedactJSON(doc)
		if err != nil {
			if json.Valid(doc) {
				t.Fatalf("RedactJSON(%q) failed on valid JSON: %v", doc, err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("RedactJSON(%q) = %q: not JSON", doc, out)
		}
		if n == 0 && !bytes.Equal(out, doc) {
			t.Fatalf("RedactJSON(%q) changed a document without secrets: %q", doc, out)
		}
		if again, m, _ := RedactJSON(out); m != 0 || !bytes.Equal(again, out) {
			t.Fatalf("RedactJSON not idempotent on %q: %q then %q", doc, out, again)
		}
	})
}

// BenchmarkRedact: a chat turn of about 2 KB, one secret in it.
func BenchmarkRedact(b *testing.B) {
	turn := strings.Repeat("We moved the staging database to the new cluster and the API answers in 40 ms now. ", 24) +
		"The deploy token is " + fakeGitHub
	b.SetBytes(int64(len(turn)))
	for b.Loop() {
		Redact(turn)
	}
}

// BenchmarkRedactJSON: an agent_end event of 200 messages, about 100 KB.
func BenchmarkRedactJSON(b *testing.B) {
	msgs := make([]map[string]any, 200)
	for i := range msgs {
		msgs[i] = map[string]any{"role": "user", "content": strings.Repeat("We moved the staging database to the new cluster. ", 10), "timestamp": 1767225600000 + i}
	}
	msgs[100]["content"] = "the deploy token is " + fakeGitHub
	doc, _ := json.Marshal(map[string]any{"messages": msgs, "success": true})
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, n, err := RedactJSON(doc); err != nil || n != 1 {
			b.Fatal(n, err)
		}
	}
}
