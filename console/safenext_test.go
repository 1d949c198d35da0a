package console

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// Whatever safeNext keeps, a browser at the console resolves to the
// console's own origin, and nothing in it could be read as a host.
func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/", "/memories?agent=main", "//evil.example", "/\\evil.example", "/\t/evil.example",
		"/%2F%2Fevil.example", "https://evil.example", "/%5C%5Cevil", "/a/../..//evil", "/%0d%0aSet-Cookie:x"} {
		f.Add(s)
	}
	base, _ := url.Parse("http://127.0.0.1:7434/login")
	f.Fuzz(func(t *testing.T, next string) {
		got := safeNext(next)
		if got == "/" {
			return
		}
		if got != next {
			t.Fatalf("safeNext(%q) = %q: it keeps a path or gives /", next, got)
		}
		dec, _ := url.PathUnescape(got)
		for _, p := range []string{got, dec} {
			if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\") ||
				strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("safeNext(%q) kept %q", next, p)
			}
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("kept %q, which does not parse: %v", got, err)
		}
		if r := base.ResolveReference(u); r.Host != base.Host || r.Scheme != base.Scheme {
			t.Fatalf("kept %q, which resolves to %s", got, r)
		}
	})
}

// The throttle stays bounded whatever the number of addresses, and a
// locked address stays locked while others come and go.
func TestLimiterBounded(t *testing.T) {
	l := newLimiter()
	now := time.Now()
	for range loginFree + 1 {
		l.fail("10.0.0.1", now)
	}
	for i := range maxTracked + 50 {
		l.fail("10.1."+string(rune('a'+i%26))+"."+time.Duration(i).String(), now.Add(time.Duration(i)*time.Millisecond))
	}
	if len(l.byAddr) > maxTracked {
		t.Fatalf("%d addresses tracked", len(l.byAddr))
	}
	if l.wait("10.9.9.9", now) <= 0 {
		t.Fatal("the overall limit did not lock after many failures")
	}
	if l.wait("10.0.0.1", now) <= 0 {
		t.Fatal("the locked address was forgotten to make room")
	}
	later := now.Add(time.Duration(maxTracked+50)*time.Millisecond + allMaxLock + time.Second)
	if l.wait("10.9.9.9", later) != 0 {
		t.Fatal("the overall lockout outlived its cap")
	}
}

// No string the fuzzer makes signs in (only the admin token's holder can
// sign a code), and none panics.
func FuzzRedeem(f *testing.F) {
	const token = "ZnV6ei1hZG1pbi10b2tlbi1ub3QtYS1yZWFsLW9uZS0wMDAwMDA"
	now := time.Unix(1_800_000_000, 0)
	s := &Server{cfg: Config{AdminToken: token}, o: Options{Now: func() time.Time { return now }}, used: map[string]time.Time{}}
	good := []byte(SignInCode(token, now))
	good[len(good)-3] ^= 1 // a real code, one bit of its signature off
	f.Add(string(good))
	f.Add(SignInCode("b3RoZXItdG9rZW4", now))
	f.Add("")
	f.Add("!!!")
	f.Fuzz(func(t *testing.T, code string) {
		if s.redeem(code) {
			t.Fatalf("redeemed %q, which the test did not sign", code)
		}
	})
}

func TestRedeemOnce(t *testing.T) {
	const token = "ZnV6ei1hZG1pbi10b2tlbi1ub3QtYS1yZWFsLW9uZS0wMDAwMDA"
	now := time.Unix(1_800_000_000, 0)
	s := &Server{cfg: Config{AdminToken: token}, o: Options{Now: func() time.Time { return now }}, used: map[string]time.Time{}}
	code := SignInCode(token, now)
	if !s.redeem(code) || s.redeem(code) {
		t.Fatal("a code must work exactly once")
	}
}
