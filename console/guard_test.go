package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawmem/clawmem/console"
	"github.com/clawmem/clawmem/schemas"
)

// A page reached through DNS rebinding (its own name in Host and Origin)
// gets nothing: no page, no login form, and with a stolen CSRF token and
// session no delete either.
func TestRebindingRefused(t *testing.T) {
	f := newFixture(t, console.Config{})
	m := mem(1, "agent:main", "The garage code is on the fridge")
	f.seed(t, m)
	anon := browser()
	for _, path := range []string{"/", "/login", "/memories", "/static/app.css"} {
		req, _ := http.NewRequest(http.MethodGet, f.url+path, nil)
		req.Host = "evil.example"
		resp, err := anon.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s as evil.example: %d", path, resp.StatusCode)
		}
	}
	admin := f.login(t)
	_, page, _ := get(t, admin, f.url+"/memories/"+m.ID+"/delete")
	form := url.Values{"csrf": {csrfOf(t, page)}, "confirm": {"yes"}}
	u, _ := url.Parse(f.url)
	req, _ := http.NewRequest(http.MethodPost, f.url+"/memories/"+m.ID+"/delete", strings.NewReader(form.Encode()))
	req.Host = "evil.example:" + u.Port()
	req.Header.Set("Origin", "http://evil.example:"+u.Port())
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range admin.Jar.Cookies(u) {
		req.AddCookie(c)
	}
	resp, err := browser().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("rebound delete: %d", resp.StatusCode)
	}
	if res, _ := f.c.Call(context.Background(), schemas.OpShow, "", schemas.ShowRequest{MemoryID: m.ID}); res.IsError {
		t.Fatal("the rebound delete deleted")
	}
	// The console's own names still work: localhost and [::1] by any port.
	req, _ = http.NewRequest(http.MethodGet, f.url+"/login", nil)
	req.Host = "localhost:" + u.Port()
	if resp, err := anon.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("login page as localhost: %v %v", resp, err)
	}
}

// Whatever next a login carries, it lands on this site: the redirect
// variants browsers would resolve to another host all become "/".
func TestLoginRedirectStaysHome(t *testing.T) {
	f := newFixture(t, console.Config{})
	for _, next := range []string{
		"/\t/evil.example/phish", "//evil.example", "/\\evil.example", "https://evil.example", "/%2F%2Fevil.example",
		"/%5Cevil.example", "/%09/evil.example", "\\\\evil.example", "http:evil.example", "/x\r\nLocation: //evil.example",
		" /evil.example", "", "evil.example", "/%zz",
	} {
		code, _, h := post(t, browser(), f.url+"/login", url.Values{"token": {f.admin}, "next": {next}}, nil)
		if code != http.StatusSeeOther || h.Get("Location") != "/" {
			t.Errorf("next %q: %d to %q", next, code, h.Get("Location"))
		}
	}
	// The probe as it was sent: the query string decoded once.
	resp, err := browser().Get(f.url + "/login?next=/%09/evil.example/phish")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	code, page, _ := get(t, browser(), f.url+"/login?next=/%09/evil.example/phish")
	if code != http.StatusOK || !strings.Contains(page, `name="next" value="/"`) {
		t.Fatalf("login page keeps a bad next: %d", code)
	}
	// A path of this site is kept.
	if _, _, h := post(t, browser(), f.url+"/login", url.Values{"token": {f.admin}, "next": {"/memories?agent=main&q=a%2Fb"}}, nil); h.Get("Location") != "/memories?agent=main&q=a%2Fb" {
		t.Fatalf("own path: %q", h.Get("Location"))
	}
}

// clock is a settable time for the throttle's lockouts.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// 30 wrong tokens in a row: five are answered, then the address is locked
// out with 429 and Retry-After (the right token too); after the lockout
// the right token logs in.
func TestLoginThrottled(t *testing.T) {
	clk := &clock{t: time.Now()}
	f := newFixture(t, console.Config{}, func(o *console.Options) { o.Now = clk.now })
	counts := map[int]int{}
	retry := 0
	for i := range 30 {
		code, _, h := post(t, browser(), f.url+"/login", url.Values{"token": {"wrong-" + strconv.Itoa(i)}}, nil)
		counts[code]++
		if code == http.StatusTooManyRequests {
			retry, _ = strconv.Atoi(h.Get("Retry-After"))
		}
	}
	if counts[http.StatusUnauthorized] != 6 || counts[http.StatusTooManyRequests] != 24 || retry < 1 {
		t.Fatalf("answers %v, Retry-After %d: want 6 refusals, then 429 with a Retry-After", counts, retry)
	}
	if code, _, _ := post(t, browser(), f.url+"/login", url.Values{"token": {f.admin}}, nil); code != http.StatusTooManyRequests {
		t.Fatalf("the right token during the lockout: %d", code)
	}
	// A sign-in link is throttled alike.
	if code, _, _ := get(t, browser(), f.url+"/login?code="+console.SignInCode(f.admin, clk.now())); code != http.StatusTooManyRequests {
		t.Fatalf("a sign-in link during the lockout: %d", code)
	}
	clk.add(time.Duration(retry)*time.Second + time.Millisecond)
	if code, _, _ := post(t, browser(), f.url+"/login", url.Values{"token": {f.admin}}, nil); code != http.StatusSeeOther {
		t.Fatalf("the right token after the lockout: %d", code)
	}
	// Each further failure doubles the lockout.
	for range 6 {
		post(t, browser(), f.url+"/login", url.Values{"token": {"wrong"}}, nil)
	}
	_, _, h := post(t, browser(), f.url+"/login", url.Values{"token": {"wrong"}}, nil)
	first, _ := strconv.Atoi(h.Get("Retry-After"))
	clk.add(time.Duration(first) * time.Second)
	post(t, browser(), f.url+"/login", url.Values{"token": {"wrong"}}, nil)
	_, _, h = post(t, browser(), f.url+"/login", url.Values{"token": {"wrong"}}, nil)
	if second, _ := strconv.Atoi(h.Get("Retry-After")); second != 2*first {
		t.Fatalf("lockouts %d s then %d s: want doubling", first, second)
	}
}

// A sign-in link logs in as admin once; used again, expired, signed with
// another token or altered it is refused. The token is not in it.
func TestSignInLink(t *testing.T) {
	clk := &clock{t: time.Now()}
	f := newFixture(t, console.Config{ReadToken: "cmVhZC10b2tlbi1ub3QtYS1yZWFsLW9uZS0wMDAwMDAwMDAw"}, func(o *console.Options) { o.Now = clk.now })
	code := console.SignInCode(f.admin, clk.now())
	if strings.Contains(code, f.admin) {
		t.Fatal("the token is in the link")
	}
	b := browser()
	status, _, h := get(t, b, f.url+"/login?code="+code+"&next=/memories")
	if status != http.StatusSeeOther || h.Get("Location") != "/memories" {
		t.Fatalf("sign-in: %d %q", status, h.Get("Location"))
	}
	if status, page, _ := get(t, b, f.url+"/memories"); status != http.StatusOK || !strings.Contains(page, "admin") {
		t.Fatalf("after sign-in: %d", status)
	}
	for name, c := range map[string]string{
		"used again":         code,
		"another token's":    console.SignInCode("YW5vdGhlci10b2tlbi1ub3QtYS1yZWFsLW9uZS0wMDAwMDAwMDA", clk.now()),
		"the read token's":   console.SignInCode("cmVhZC10b2tlbi1ub3QtYS1yZWFsLW9uZS0wMDAwMDAwMDAw", clk.now()),
		"altered":            flip(console.SignInCode(f.admin, clk.now())),
		"not base64":         "!!!",
		"empty-ish":          "AAAA",
		"minted in a future": console.SignInCode(f.admin, clk.now().Add(time.Hour)),
	} {
		if status, page, _ := get(t, browser(), f.url+"/login?code="+url.QueryEscape(c)); status != http.StatusUnauthorized || !strings.Contains(page, "clawmem ui login") {
			t.Errorf("%s: %d", name, status)
		}
		f.login(t) // a success forgets the failure, so the next probe is not throttled
	}
	late := console.SignInCode(f.admin, clk.now())
	clk.add(console.SignInTTL + time.Second)
	if status, _, _ := get(t, browser(), f.url+"/login?code="+late); status != http.StatusUnauthorized {
		t.Fatalf("expired link: %d", status)
	}
}

// flip changes one character of a code's signature.
func flip(code string) string {
	b := []byte(code)
	i := len(b) - 5
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}
