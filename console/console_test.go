package console_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/console"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/lessons"
	"github.com/clawmem/clawmem/workers/query"
)

// fixture is a console over a real query service on NATS and a real store.
type fixture struct {
	url     string
	admin   string // the admin token
	c       client.Client
	srv     *httptest.Server
	handler http.Handler
	store   engine.Store
	nats    *natsembed.Server
}

func newFixture(t testing.TB, cfg console.Config, with ...func(*console.Options)) *fixture {
	t.Helper()
	eng, _ := testkit.Engine(t, "", testkit.LocalEmbedder(t, 256))
	ns, nc, js := natsembed.StartTest(t)
	if err := topology.Ensure(context.Background(), js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	svc := query.New(nc, eng, query.DefaultConfig(), prometheus.NewRegistry(), log)
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	p := client.NewNATSPipeline(func() (*nats.Conn, error) { return nats.Connect(ns.ClientURL()) })
	t.Cleanup(func() { p.Close() })
	c := client.NewNATS(nc)
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.AdminToken == "" {
		cfg.AdminToken = fixtureAdminToken
	}
	o := console.Options{Client: c, Pipeline: p, Log: log}
	for _, f := range with {
		f(&o)
	}
	s, err := console.New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{url: srv.URL, admin: cfg.AdminToken, c: c, srv: srv, handler: h, store: eng.Backend(), nats: ns}
}

// fixtureAdminToken is shaped like the data dir's generated tokens.
const fixtureAdminToken = "Zml4dHVyZS1hZG1pbi10b2tlbi1ub3QtYS1yZWFsLW9uZS0w"

// login is a browser logged in with the admin token.
func (f *fixture) login(t testing.TB) *http.Client {
	t.Helper()
	b := browser()
	req, _ := http.NewRequest(http.MethodPost, f.url+"/login", strings.NewReader(url.Values{"token": {f.admin}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	return b
}

// seed imports memories for agents main and other.
func (f *fixture) seed(t testing.TB, ms ...schemas.Memory) {
	t.Helper()
	res, err := f.c.Call(context.Background(), schemas.OpImport, "", schemas.ImportRequest{Memories: ms, NoDedup: true})
	if err != nil || res.IsError {
		t.Fatalf("import: %v %+v", err, res)
	}
}

func mem(i int, scope, text string) schemas.Memory {
	return schemas.Memory{ID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), Text: text, Scope: scope,
		Category: schemas.CategoryFact, Importance: 0.7, Timestamp: time.Now().Add(-time.Duration(i) * time.Hour).UnixMilli()}
}

// browser is an HTTP client with cookies that does not follow redirects.
func browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) (int, string, http.Header) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func post(t *testing.T, c *http.Client, u string, form url.Values, hdr map[string]string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%s", page)
	}
	return m[1]
}

// The admin token is required (clawmem passes the data dir's when none is
// configured); tokens must differ.
func TestConfig(t *testing.T) {
	c := client.NewLocal(nil, nil)
	p := client.NewNATSPipeline(func() (*nats.Conn, error) { return nil, fmt.Errorf("unused") })
	for _, tc := range []struct {
		cfg console.Config
		ok  bool
	}{
		{console.Config{Listen: "127.0.0.1:7434", AdminToken: "a"}, true},
		{console.Config{Listen: "localhost:0", AdminToken: "a"}, true},
		{console.Config{Listen: "[::1]:7434", AdminToken: "a"}, true},
		{console.Config{Listen: "127.0.0.1:7434"}, false},
		{console.Config{Listen: "127.0.0.1:7434", ReadToken: "r"}, false},
		{console.Config{Listen: "0.0.0.0:7434", AdminToken: "a"}, true},
		{console.Config{Listen: "127.0.0.1:7434", AdminToken: "same", ReadToken: "same"}, false},
		{console.Config{Listen: "nonsense", AdminToken: "a"}, false},
	} {
		_, err := console.New(tc.cfg, console.Options{Client: c, Pipeline: p})
		if (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.cfg, err)
		}
	}
}

// With tokens: no session is sent to the login page, a wrong token is
// refused, the read token reads but changes nothing, the admin token
// changes only with the CSRF token and never cross-site; the cookie is
// HttpOnly and SameSite=Strict; logging out ends the session.
func TestAccess(t *testing.T) {
	f := newFixture(t, console.Config{ReadToken: "read-token-1234", AdminToken: "admin-token-5678"})
	m := mem(1, "agent:main", "The deploy key rotates monthly")
	f.seed(t, m)
	anon := browser()
	if code, _, h := get(t, anon, f.url+"/memories"); code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/login") {
		t.Fatalf("no session: %d %s", code, h.Get("Location"))
	}
	if code, _, _ := post(t, anon, f.url+"/memories/"+m.ID+"/delete", url.Values{"confirm": {"yes"}}, nil); code != http.StatusUnauthorized {
		t.Fatalf("POST without a session: %d", code)
	}
	if code, body, _ := post(t, anon, f.url+"/login", url.Values{"token": {"wrong"}}, nil); code != http.StatusUnauthorized || !strings.Contains(body, "not valid") {
		t.Fatalf("wrong token: %d", code)
	}
	if code, _, _ := get(t, anon, f.url+"/memories"); code != http.StatusSeeOther {
		t.Fatalf("a wrong token gave a session: %d", code)
	}

	reader := browser()
	code, _, h := post(t, reader, f.url+"/login", url.Values{"token": {"read-token-1234"}, "next": {"/memories"}}, nil)
	cookie := h.Get("Set-Cookie")
	if code != http.StatusSeeOther || h.Get("Location") != "/memories" || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
		t.Fatalf("read login: %d %q %q", code, h.Get("Location"), cookie)
	}
	code, page, _ := get(t, reader, f.url+"/memories/"+m.ID)
	if code != http.StatusOK || !strings.Contains(page, "The deploy key rotates monthly") || strings.Contains(page, "edit-form") {
		t.Fatalf("read-only memory page: %d", code)
	}
	token := csrfOf(t, page) // the logout form's
	if code, _, _ := post(t, reader, f.url+"/memories/"+m.ID+"/delete", url.Values{"csrf": {token}, "confirm": {"yes"}}, nil); code != http.StatusForbidden {
		t.Fatalf("read-only delete: %d", code)
	}

	admin := browser()
	post(t, admin, f.url+"/login", url.Values{"token": {"admin-token-5678"}}, nil)
	_, page, _ = get(t, admin, f.url+"/memories/"+m.ID+"/delete")
	token = csrfOf(t, page)
	form := url.Values{"csrf": {token}, "confirm": {"yes"}}
	for name, hdr := range map[string]map[string]string{
		"cross-site fetch":   {"Sec-Fetch-Site": "cross-site"},
		"foreign origin":     {"Origin": "http://evil.example"},
		"same-site neighbor": {"Sec-Fetch-Site": "same-site"},
	} {
		if code, _, _ := post(t, admin, f.url+"/memories/"+m.ID+"/delete", form, hdr); code != http.StatusForbidden {
			t.Fatalf("%s: %d", name, code)
		}
	}
	if code, _, _ := post(t, admin, f.url+"/memories/"+m.ID+"/delete", url.Values{"csrf": {strings.Repeat("0", 64)}, "confirm": {"yes"}}, nil); code != http.StatusForbidden {
		t.Fatalf("wrong CSRF token: %d", code)
	}
	if code, _, _ := post(t, admin, f.url+"/memories/"+m.ID+"/delete", url.Values{"confirm": {"yes"}}, nil); code != http.StatusForbidden {
		t.Fatalf("no CSRF token: %d", code)
	}
	if res, _ := f.c.Call(context.Background(), schemas.OpShow, "", schemas.ShowRequest{MemoryID: m.ID}); res.IsError {
		t.Fatal("a refused request deleted the memory")
	}
	host := strings.TrimPrefix(f.url, "http://")
	if code, _, h := post(t, admin, f.url+"/memories/"+m.ID+"/delete", form, map[string]string{"Origin": "http://" + host, "Sec-Fetch-Site": "same-origin"}); code != http.StatusSeeOther {
		t.Fatalf("admin delete: %d %v", code, h)
	}
	if res, _ := f.c.Call(context.Background(), schemas.OpShow, "", schemas.ShowRequest{MemoryID: m.ID}); !res.IsError {
		t.Fatal("the admin's delete did not delete")
	}
	if code, _, _ := post(t, admin, f.url+"/logout", url.Values{"csrf": {token}}, nil); code != http.StatusSeeOther {
		t.Fatalf("logout: %d", code)
	}
	if code, _, _ := get(t, admin, f.url+"/"); code != http.StatusSeeOther {
		t.Fatalf("after logout: %d", code)
	}
	// The login page never sends anyone off-site.
	if code, _, h := post(t, browser(), f.url+"/login", url.Values{"token": {"admin-token-5678"}, "next": {"//evil.example/x"}}, nil); code != http.StatusSeeOther || h.Get("Location") != "/" {
		t.Fatalf("next off-site: %d %s", code, h.Get("Location"))
	}
}

// An admin's changes need the session's CSRF token and the same site;
// the token without the session is nothing.
func TestAdminNeedsCSRF(t *testing.T) {
	f := newFixture(t, console.Config{})
	m := mem(1, "agent:main", "The office wifi is called kestrel")
	f.seed(t, m)
	b := f.login(t)
	code, page, _ := get(t, b, f.url+"/memories/"+m.ID)
	if code != http.StatusOK || !strings.Contains(page, "edit-form") {
		t.Fatalf("memory page: %d", code)
	}
	token := csrfOf(t, page)
	edit := url.Values{"csrf": {token}, "text": {"The office wifi is called osprey"}, "category": {"fact"}, "importance": {"0.9"}}
	if code, _, _ := post(t, browser(), f.url+"/memories/"+m.ID+"/edit", edit, nil); code != http.StatusUnauthorized {
		t.Fatalf("a POST with a CSRF token but not its session: %d", code)
	}
	if code, _, _ := post(t, b, f.url+"/memories/"+m.ID+"/edit", edit, map[string]string{"Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
		t.Fatalf("cross-site POST: %d", code)
	}
	if code, _, h := post(t, b, f.url+"/memories/"+m.ID+"/edit", edit, nil); code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "saved=1") {
		t.Fatalf("edit: %d %s", code, h.Get("Location"))
	}
	_, page, _ = get(t, b, f.url+"/memories/"+m.ID)
	if !strings.Contains(page, "osprey") || !strings.Contains(page, "0.90") {
		t.Fatal("the edit did not take")
	}
}

// Bad query strings get a clear message and a 4xx, never a 500 or a
// stack trace; another agent's memory is not found.
func TestBadInput(t *testing.T) {
	f := newFixture(t, console.Config{})
	mine, theirs := mem(1, "agent:main", "Main's standup is at ten"), mem(2, "agent:other", "Other's secret build flag")
	f.seed(t, mine, theirs)
	b := f.login(t)
	for _, tc := range []struct {
		path   string
		status int
		says   string
	}{
		{"/memories?since=2026-13-45", 400, "not a date"},
		{"/memories?until=yesterday", 400, "not a date"},
		{"/memories?since=2026-05-02&until=2026-05-01", 400, "before since"},
		{"/memories?limit=100000", 400, "limit"},
		{"/memories?limit=-3", 400, "limit"},
		{"/memories?limit=ten", 400, "limit"},
		{"/memories?agent=a.b", 400, "agent"},
		{"/memories?agent=%3E", 400, "agent"},
		{"/memories?agent=../x", 400, "agent"},
		{"/memories?agent=nobody", 404, "No agent"},
		{"/memories?agent=main&scope=agent:other", 403, ""},
		{"/memories?scope=no-such-scope:x", 400, "unknown scope"},
		{"/search?q=x&scope=nonsense", 400, "unknown scope"},
		{"/memories?category=gossip", 400, "category"},
		{"/memories?cursor=garbage", 400, "cursor"},
		{"/memories?text=" + url.QueryEscape(strings.Repeat("x", 5000)), 400, "bytes"},
		{"/memories?text=%ff%fe", 400, "bytes"},
		{"/memories/" + theirs.ID + "?agent=main", 404, ""},
		{"/memories/" + theirs.ID[:8] + "?agent=main", 404, ""},
		{"/memories/not-an-id", 400, "not a memory id"},
		// A long bad id is quoted cut at a character's boundary, never in the middle of one.
		{"/memories/" + url.PathEscape("x"+strings.Repeat("é", 79)+"日本語"), 400, "not a memory id"},
		{"/memories/ffffffff-ffff-4fff-8fff-ffffffffffff", 404, ""},
		{"/search?q=standup&agent=main&limit=500", 400, "limit"},
		{"/search?q=standup&agent=nobody", 404, "No agent"},
		{"/search?q=x&agent=main&scope=agent:other", 403, ""},
		{"/dlq?stage=a.b", 400, "stage"},
		{"/dlq/0", 400, ""},
		{"/dlq/abc", 400, ""},
		{"/dlq/999999", 404, "no dead letter"},
		{"/distill?agent=*", 400, "agent"},
		{"/no-such-page", 404, ""},
	} {
		code, body, _ := get(t, b, f.url+tc.path)
		if code != tc.status || !strings.Contains(strings.ToLower(body), strings.ToLower(tc.says)) {
			t.Errorf("%s: %d, want %d saying %q:\n%s", tc.path, code, tc.status, tc.says, textOf(body))
		}
		if strings.Contains(body, "goroutine ") || strings.Contains(body, ".go:") {
			t.Errorf("%s: a stack trace on the page", tc.path)
		}
		if !utf8.ValidString(body) || strings.ContainsRune(body, utf8.RuneError) || strings.Contains(body, `\x`) {
			t.Errorf("%s: the page has a character cut in half", tc.path)
		}
	}
	// The agent's own memory shows, as it sees it.
	if code, body, _ := get(t, b, f.url+"/memories/"+mine.ID[:8]+"?agent=main"); code != 200 || !strings.Contains(body, "standup") {
		t.Fatalf("own memory by prefix: %d", code)
	}
	// Bad forms too.
	_, page, _ := get(t, b, f.url+"/memories/"+mine.ID)
	token := csrfOf(t, page)
	for name, form := range map[string]url.Values{
		"empty text":      {"csrf": {token}, "text": {"  "}},
		"importance 7":    {"csrf": {token}, "text": {"x y z"}, "importance": {"7"}},
		"bad category":    {"csrf": {token}, "text": {"x y z"}, "category": {"gossip"}},
		"NUL in the text": {"csrf": {token}, "text": {"a\x00b"}},
		"agent a.b":       {"csrf": {token}, "text": {"x y z"}, "agent": {"a.b"}},
	} {
		if code, body, _ := post(t, b, f.url+"/memories/"+mine.ID+"/edit", form, nil); code != 400 {
			t.Errorf("%s: %d %s", name, code, textOf(body))
		}
	}
	if code, _, _ := post(t, b, f.url+"/memories/"+theirs.ID+"/edit", url.Values{"csrf": {token}, "text": {"hijacked"}, "agent": {"main"}}, nil); code != 404 {
		t.Errorf("editing another agent's memory as main: %d", code)
	}
	if code, _, _ := post(t, b, f.url+"/memories/"+mine.ID+"/delete", url.Values{"csrf": {token}}, nil); code != 400 {
		t.Errorf("delete without the confirmation: %d", code)
	}
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

func textOf(page string) string {
	return strings.Join(strings.Fields(tagRE.ReplaceAllString(page, " ")), " ")
}

// The memories list filters by agent, scope, category, dates and text,
// and its cursor pages cover every memory once.
func TestMemoriesFiltersAndPages(t *testing.T) {
	f := newFixture(t, console.Config{})
	var ms []schemas.Memory
	for i := range 130 {
		scope := "agent:main"
		if i%3 == 0 {
			scope = "agent:other"
		}
		m := mem(i+1, scope, fmt.Sprintf("Memory number %03d about the build", i))
		if i%5 == 0 {
			m.Category = schemas.CategoryPreference
			m.Text = fmt.Sprintf("Memory number %03d: prefers tabs", i)
		}
		ms = append(ms, m)
	}
	f.seed(t, ms...)
	b := f.login(t)
	idRE := regexp.MustCompile(`href="/memories/([0-9a-f-]{36})`)
	seen := map[string]bool{}
	next := f.url + "/memories?limit=40"
	for pages := 0; next != ""; pages++ {
		code, page, _ := get(t, b, next)
		if code != 200 || pages > 5 {
			t.Fatalf("page %d: %d", pages, code)
		}
		for _, m := range idRE.FindAllStringSubmatch(page, -1) {
			if seen[m[1]] {
				t.Fatalf("%s on two pages", m[1])
			}
			seen[m[1]] = true
		}
		next = ""
		if m := regexp.MustCompile(`href="(/memories\?[^"]*cursor=[^"]*)" id="next-page"`).FindStringSubmatch(page); m != nil {
			next = f.url + strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if len(seen) != 130 {
		t.Fatalf("pages showed %d of 130 memories", len(seen))
	}
	count := func(q string) int {
		code, page, _ := get(t, b, f.url+"/memories?limit=200&"+q)
		if code != 200 {
			t.Fatalf("%s: %d %s", q, code, textOf(page))
		}
		return len(idRE.FindAllString(page, -1))
	}
	if n := count("scope=agent:other"); n != 44 {
		t.Errorf("scope agent:other: %d", n)
	}
	if n := count("agent=main"); n != 86 {
		t.Errorf("agent main: %d", n)
	}
	if n := count("category=preference"); n != 26 {
		t.Errorf("category preference: %d", n)
	}
	if n := count("agent=main&category=preference"); n != 17 {
		t.Errorf("main's preferences: %d", n)
	}
	if n := count("text=TABS"); n != 26 {
		t.Errorf("text TABS: %d", n)
	}
	// Memory i is i+1 hours old: today's and yesterday's dates hold the
	// last 48 hours at most.
	today := time.Now().UTC()
	hours := today.Hour() + 24 + 1 // hours since yesterday's start, rounded up
	if n := count("since=" + today.AddDate(0, 0, -1).Format(time.DateOnly) + "&until=" + today.Format(time.DateOnly)); n < hours-2 || n > hours {
		t.Errorf("since yesterday: %d memories, want about %d", n, hours)
	}
}

// Every page renders, and memory text that is markup renders as text.
func TestPagesEscape(t *testing.T) {
	f := newFixture(t, console.Config{})
	evil := []string{`<script>window.__xss=1</script>`, `<img src=x onerror="window.__xss=2">`, `javascript:alert(3)`}
	for i, text := range evil {
		f.seed(t, mem(i+1, "agent:main", text))
	}
	b := f.login(t)
	for _, path := range []string{"/", "/memories", "/memories?agent=main", "/search?q=script&agent=main", "/search?q=alert",
		"/dlq", "/distill", "/config", "/memories/" + mem(1, "", "").ID} {
		code, page, h := get(t, b, f.url+path)
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, textOf(page))
		}
		if !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Fatalf("%s: CSP %q", path, h.Get("Content-Security-Policy"))
		}
		if strings.Contains(page, "<script>window") || strings.Contains(page, "<img src=x") || strings.Contains(page, `href="javascript:`) {
			t.Fatalf("%s: markup from a memory is live on the page", path)
		}
	}
	_, page, _ := get(t, b, f.url+"/memories")
	if !strings.Contains(page, "&lt;script&gt;window.__xss=1&lt;/script&gt;") {
		t.Fatal("the script text is not shown as text")
	}
}

// BenchmarkMemoriesPage100k is the memories list's server time at 100,000
// memories (target ≤ 300 ms): the first page, a page 50,000 deep by
// cursor, a text filter and an agent's view. It runs the handler
// directly, so the figure is the server's, not the client's.
func BenchmarkMemoriesPage100k(b *testing.B) {
	if testing.Short() {
		b.Skip("seeds 100,000 memories")
	}
	f := newFixture(b, console.Config{})
	const n = 100_000
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now().UnixMilli()
	batch := make([]schemas.Memory, 0, 1000)
	for i := range n {
		vec := make([]float32, 256)
		for j := range vec {
			vec[j] = float32(rng.NormFloat64())
		}
		m := mem(i+1, []string{"agent:main", "agent:other", "global"}[i%3], fmt.Sprintf("Memory %06d about topic %d and the build", i, i%97))
		m.Timestamp, m.Vector = now-int64(i)*60_000, vec
		if batch = append(batch, m); len(batch) == cap(batch) {
			if err := f.store.Import(context.Background(), batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	deep := fmt.Sprintf("%d:%s", now-50_000*60_000, mem(50_001, "", "").ID)
	u, _ := url.Parse(f.url)
	session := f.login(b).Jar.Cookies(u)
	for _, tc := range []struct{ name, path string }{
		{"first", "/memories"},
		{"deep", "/memories?cursor=" + url.QueryEscape(deep)},
		{"text", "/memories?text=topic+42+and"},
		{"agent", "/memories?agent=main&category=fact"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, tc.path, nil)
				req.Host = u.Host
				for _, c := range session {
					req.AddCookie(c)
				}
				f.handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "Memory 0") {
					b.Fatalf("%s: %d", tc.path, rec.Code)
				}
			}
		})
	}
}

// The overview's live part streams as server-sent events: each event is
// the panel rendered anew, data lines of HTML.
func TestLiveStreams(t *testing.T) {
	f := newFixture(t, console.Config{})
	f.seed(t, mem(1, "agent:main", "The standup moved to 9:45"), mem(2, "agent:main", "Lunch is at noon on Fridays"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/live", nil)
	resp, err := f.login(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var event strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(event.String(), "\n\n") {
		n, err := resp.Body.Read(buf)
		event.Write(buf[:n])
		if err != nil {
			t.Fatalf("after %q: %v", event.String(), err)
		}
	}
	first := event.String()[:strings.Index(event.String(), "\n\n")]
	for line := range strings.SplitSeq(first, "\n") {
		if !strings.HasPrefix(line, "data: ") {
			t.Fatalf("not a data line: %q", line)
		}
	}
	if !strings.Contains(first, `<b id="total">2</b>`) || !strings.Contains(first, "Pipeline") {
		t.Fatalf("live panel: %s", first)
	}
}

// Re-running a session's distillation goes to the console's Distill with
// the form's agent and session, and the page reports what it did; where
// the console has no distiller it says so.
func TestDistillRerun(t *testing.T) {
	f := newFixture(t, console.Config{})
	b := f.login(t)
	_, page, _ := get(t, b, f.url+"/distill")
	if !strings.Contains(page, "No distillation jobs") || strings.Contains(page, `id="rerun"`) {
		t.Fatalf("distill page without a distiller: %s", textOf(page))
	}
	token := csrfOf(t, page)
	if code, body, _ := post(t, b, f.url+"/distill/run", url.Values{"csrf": {token}, "session": {"s-1"}}, nil); code != http.StatusNotImplemented || !strings.Contains(body, "not available") {
		t.Fatalf("re-run without a distiller: %d", code)
	}

	var got []string
	f = newFixture(t, console.Config{}, func(o *console.Options) {
		o.Distill = func(_ context.Context, agent, session string) (lessons.TranscriptReport, error) {
			got = append(got, agent+"/"+session)
			return lessons.TranscriptReport{Sessions: 1, Distilled: 2, Lessons: 3}, nil
		}
	})
	b = f.login(t)
	_, page, _ = get(t, b, f.url+"/distill?agent=main&session=s-7")
	if !strings.Contains(page, `id="rerun"`) {
		t.Fatalf("no re-run form: %s", textOf(page))
	}
	token = csrfOf(t, page)
	code, _, h := post(t, b, f.url+"/distill/run", url.Values{"csrf": {token}, "agent": {"main"}, "session": {"s-7"}}, nil)
	if code != http.StatusSeeOther || len(got) != 1 || got[0] != "main/s-7" {
		t.Fatalf("re-run: %d, calls %v", code, got)
	}
	_, page, _ = get(t, b, f.url+h.Get("Location"))
	if !strings.Contains(page, "2 range(s) distilled, 3 lesson(s)") {
		t.Fatalf("after the re-run: %s", textOf(page))
	}
	for name, form := range map[string]url.Values{
		"no session": {"csrf": {token}},
		"agent a.b":  {"csrf": {token}, "agent": {"a.b"}, "session": {"s"}},
	} {
		if code, _, _ := post(t, b, f.url+"/distill/run", form, nil); code != http.StatusBadRequest {
			t.Errorf("%s: %d", name, code)
		}
	}
}

// The overview tells a first start's normal state as normal: the vector
// index built from the database of a new store, and the store's partition
// consumers in their order (store-2 before store-10).
func TestOverviewSaysWhatIsNormal(t *testing.T) {
	f := newFixture(t, console.Config{})
	_, js := natsembed.ConnectTest(t, f.nats)
	for _, p := range []int{10, 2, 1} {
		cc := jetstream.ConsumerConfig{Durable: schemas.ConsumerStoreFor(p), FilterSubjects: schemas.WorkFilters(p)}
		if _, err := js.CreateOrUpdateConsumer(context.Background(), schemas.StreamWork, cc); err != nil {
			t.Fatal(err)
		}
	}
	code, page, _ := get(t, f.login(t), f.url+"/")
	if code != http.StatusOK {
		t.Fatalf("overview: %d", code)
	}
	if !strings.Contains(page, "built from the database at open (a new store: normal on a first start)") {
		t.Errorf("the overview does not say the index was built as normal:\n%s", page)
	}
	one, two, ten := strings.Index(page, "<td>store-1</td>"), strings.Index(page, "<td>store-2</td>"), strings.Index(page, "<td>store-10</td>")
	if one < 0 || !(one < two && two < ten) {
		t.Errorf("consumers not in natural order (store-1 at %d, store-2 at %d, store-10 at %d)", one, two, ten)
	}
}
