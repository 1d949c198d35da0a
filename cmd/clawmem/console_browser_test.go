package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/internal/instance"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/schemas"
)

// chromium finds a headless-capable Chromium. Without one the browser
// test skips, unless CLAWMEM_BROWSER_TESTS is set (CI sets it, having
// installed Debian's chromium): then its absence fails the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CLAWMEM_BROWSER_TESTS") != "" {
		t.Fatal("CLAWMEM_BROWSER_TESTS is set but no chromium is installed (apt-get install chromium)")
	}
	t.Skip("no chromium installed: the browser test needs it (CI installs it)")
	return ""
}

// pageWatch records what a page must never do: write an error to the
// console, throw, or open a dialog (what an injected alert() would do).
type pageWatch struct {
	mu      sync.Mutex
	errors  []string
	dialogs []string
}

func (w *pageWatch) listen(ctx context.Context) {
	messages := chromedp.Console(ctx)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				w.mu.Lock()
				w.errors = append(w.errors, m.String()+" "+m.URL)
				w.mu.Unlock()
			}
		}
	}()
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			w.mu.Lock()
			w.dialogs = append(w.dialogs, ev.Message)
			w.mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
}

// expect forgets the errors whose text contains s: what a page meant to
// fail (a 400 for bad input) logs.
func (w *pageWatch) expect(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var keep []string
	for _, e := range w.errors {
		if !strings.Contains(e, s) {
			keep = append(keep, e)
		}
	}
	w.errors = keep
}

func (w *pageWatch) check(t *testing.T, where string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errors) > 0 || len(w.dialogs) > 0 {
		t.Fatalf("%s: console errors %q, dialogs %q", where, w.errors, w.dialogs)
	}
}

// TestConsoleInBrowser drives a real headless Chromium through the web
// console of a real `clawmem up` with seeded memories: every page loads
// without a console error; filters and pagination work; an edit and a
// delete take effect in the store; a replay empties a dead letter (and
// the replayed event becomes a memory); memory text that is markup stays
// text and runs nothing. Each page's screenshot is written under the
// test's temp dir (and to $CLAWMEM_SCREENSHOTS when set).
func TestConsoleInBrowser(t *testing.T) {
	chrome := chromium(t)
	dir := t.TempDir()
	in := startUp(t, dir)
	base := in.info.URLs["console"]
	if base == "" {
		t.Fatalf("no console URL in the run file: %+v\n%s", in.info, in.logs.String())
	}
	nc, err := adminConn(in.dir, in.info.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := client.NewNATS(nc)
	call := func(op, agent string, req, out any) schemas.ToolResult {
		t.Helper()
		res, err := c.Call(context.Background(), op, agent, req)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if out != nil {
			raw, _ := json.Marshal(res.Details)
			_ = json.Unmarshal(raw, out)
		}
		return res
	}

	// Seed: 40 memories of main over the last days, 8 of other, and three
	// whose text is markup.
	now := time.Now()
	var ms []schemas.Memory
	id := func(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i) }
	topics := []string{"the deploy pipeline", "the staging database", "the release train", "the on-call rota", "the billing service"}
	for i := range 40 {
		m := schemas.Memory{ID: id(i + 1), Scope: "agent:main", Category: schemas.CategoryFact, Importance: 0.6,
			Text:      fmt.Sprintf("Note %02d: %s runs from the eu-west region", i, topics[i%len(topics)]),
			Timestamp: now.Add(-time.Duration(i) * 7 * time.Hour).UnixMilli()}
		if i%4 == 0 {
			m.Category, m.Text = schemas.CategoryPreference, fmt.Sprintf("Note %02d: the user prefers tabs over spaces in %s", i, topics[i%len(topics)])
		}
		ms = append(ms, m)
	}
	for i := range 8 {
		ms = append(ms, schemas.Memory{ID: id(100 + i), Scope: "agent:other", Category: schemas.CategoryFact, Importance: 0.5,
			Text: fmt.Sprintf("Other agent note %d about the secret build flag", i), Timestamp: now.Add(-time.Duration(i) * time.Hour).UnixMilli()})
	}
	evil := []string{`<script>window.__xss=1</script> xss-probe one`, `<img src=x onerror="window.__xss=2"> xss-probe two`, `javascript:window.__xss=3 xss-probe three`}
	for i, text := range evil {
		ms = append(ms, schemas.Memory{ID: id(200 + i), Scope: "agent:main", Category: schemas.CategoryFact, Importance: 0.5, Text: text,
			Timestamp: now.Add(-time.Minute).UnixMilli()})
	}
	if res := call(schemas.OpImport, "", schemas.ImportRequest{Memories: ms, NoDedup: true}, nil); res.IsError {
		t.Fatalf("import: %+v", res)
	}
	// A dead letter: an agent_end event the capture stage gave up on.
	js, _ := jetstream.New(nc)
	subject := schemas.EventSubject(schemas.EventKind("agent_end"), "main")
	event, _ := json.Marshal(schemas.HookEvent{V: schemas.Version, Kind: "agent_end", AgentID: "main", SessionKey: "s-dlq", Timestamp: now.UnixMilli(),
		Event: json.RawMessage(`{"success":true,"messages":[{"role":"user","content":"Remember that I always drink green tea before standup"}]}`)})
	dl := nats.NewMsg(schemas.DLQSubjectFor("capture", subject))
	dl.Data = event
	dl.Header.Set(schemas.HeaderDLQStage, "capture")
	dl.Header.Set(schemas.HeaderDLQSubject, subject)
	dl.Header.Set(schemas.HeaderDLQReason, "embed: the embedding endpoint timed out")
	dl.Header.Set(schemas.HeaderDLQAttempts, "5")
	if _, err := js.PublishMsg(context.Background(), dl); err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no deadline of its own
		t.Fatal(err)
	}
	w := &pageWatch{}
	w.listen(ctx)
	shots := t.TempDir()
	do := func(where string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		w.check(t, where)
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{shots, os.Getenv("CLAWMEM_SCREENSHOTS")} {
			if d != "" {
				if err := os.WriteFile(filepath.Join(d, "console-"+name+".png"), buf, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	rows := func() int { return evalJS[int](t, ctx, `document.querySelectorAll('#memories tbody tr a').length`) }
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }

	// Signed out, every page leads to the login form; the one-time link
	// `clawmem ui login` prints signs the browser in.
	do("login page", chromedp.Navigate(base+"/memories"), chromedp.WaitVisible(css(`input[name=token]`)))
	shot("login")
	code, link, errOut := runCLI(t, "ui", "login", "--data-dir", dir)
	link = strings.TrimSpace(link)
	if code != 0 || !strings.HasPrefix(link, base+"/login?code=") {
		t.Fatalf("clawmem ui login: %d %q %s", code, link, errOut)
	}

	// Overview: counts, the chart, the live panel.
	do("overview", chromedp.Navigate(link), chromedp.WaitVisible(css("#total")))
	if total := text("#total"); total != fmt.Sprint(len(ms)) {
		t.Fatalf("overview total %q, want %d", total, len(ms))
	}
	if bars := evalJS[int](t, ctx, `document.querySelectorAll('svg.chart rect').length`); bars != 30 {
		t.Fatalf("chart has %d bars", bars)
	}
	do("live panel", chromedp.Sleep(300*time.Millisecond), chromedp.WaitVisible(css("#total")))
	shot("overview")

	// Memories: a page of 10, the next page, the first again.
	do("memories", chromedp.Navigate(base+"/memories?agent=main&limit=10"), chromedp.WaitVisible(css("#memories")))
	first := text("#memories tbody tr:first-child td.text")
	if n := rows(); n != 10 {
		t.Fatalf("page of 10 shows %d", n)
	}
	shot("memories")
	do("next page", chromedp.Click(css("#next-page")), chromedp.WaitVisible(css("#first-page")))
	if second := text("#memories tbody tr:first-child td.text"); first == second || rows() != 10 {
		t.Fatalf("next page starts with %q, the first with %q", second, first)
	}
	do("first page", chromedp.Click(css("#first-page")), chromedp.WaitVisible(css("#next-page")))
	if again := text("#memories tbody tr:first-child td.text"); again != first {
		t.Fatalf("first page again starts with %q, not %q", again, first)
	}
	// Filters through the form: main's preferences.
	do("filter", chromedp.Navigate(base+"/memories?agent=main"), chromedp.WaitVisible(css(`select[name=category]`)),
		chromedp.SetValue(css(`select[name=category]`), "preference"), chromedp.Submit(css(`select[name=category]`)),
		chromedp.WaitVisible(css("#memories")))
	cats := evalJS[[]string](t, ctx, `[...document.querySelectorAll('#memories tbody tr td:nth-child(4)')].map(td => td.textContent)`)
	if len(cats) != 10 {
		t.Fatalf("main has 10 preferences, the filter shows %d: %v", len(cats), cats)
	}
	for _, c := range cats {
		if c != "preference" {
			t.Fatalf("filtered rows: %v", cats)
		}
	}
	// Another agent's memories are not in main's list.
	do("isolation", chromedp.Navigate(base+"/memories?agent=main&limit=200"), chromedp.WaitVisible(css("#memories")))
	if list := text("#memories"); strings.Contains(list, "secret build flag") || rows() != 43 {
		t.Fatalf("main's list: %d rows, other's memories shown: %v", rows(), strings.Contains(list, "secret build flag"))
	}

	// Markup in memories is text: nothing runs, no element is made.
	type xssCheck struct {
		Fired      bool     `json:"fired"`
		Imgs       int      `json:"imgs"`
		JSLinks    int      `json:"jsLinks"`
		ScriptTags int      `json:"scriptTags"`
		Texts      []string `json:"texts"`
	}
	const probe = `({fired: window.__xss !== undefined, imgs: document.querySelectorAll('main img').length,
		jsLinks: document.querySelectorAll('a[href^="javascript:"]').length, scriptTags: document.querySelectorAll('main script').length,
		texts: [...document.querySelectorAll('#memories td.text')].map(td => td.textContent)})`
	do("xss", chromedp.Navigate(base+"/memories?agent=main&text=xss-probe"), chromedp.WaitVisible(css("#memories")))
	xss := evalJS[xssCheck](t, ctx, probe)
	if xss.Fired || xss.Imgs != 0 || xss.JSLinks != 0 || xss.ScriptTags != 0 || len(xss.Texts) != 3 {
		t.Fatalf("markup in memories: %+v", xss)
	}
	for _, want := range evil {
		if !slices.Contains(xss.Texts, want) {
			t.Fatalf("%q is not shown as written: %q", want, xss.Texts)
		}
	}
	for i := range evil {
		do("xss detail", chromedp.Navigate(base+"/memories/"+id(200+i)+"?agent=main"), chromedp.WaitVisible(css("#memory-text")))
		if got := evalJS[xssCheck](t, ctx, probe); got.Fired || got.Imgs != 0 || got.JSLinks != 0 || got.ScriptTags != 0 {
			t.Fatalf("memory %d's page: %+v", i, got)
		}
		if got := text("#memory-text"); got != evil[i] {
			t.Fatalf("memory %d shows %q", i, got)
		}
	}
	do("search xss", chromedp.Navigate(base+"/search?agent=main&q=xss-probe"), chromedp.WaitVisible(css("#results")))
	if got := evalJS[xssCheck](t, ctx, probe); got.Fired || got.Imgs != 0 || got.JSLinks != 0 || got.ScriptTags != 0 {
		t.Fatalf("the search page: %+v", got)
	}

	// Edit: the new text, category and importance are in the store.
	target := id(2)
	do("edit", chromedp.Navigate(base+"/memories/"+target+"?agent=main"), chromedp.WaitVisible(css("#edit-form")),
		chromedp.SetValue(css(`#edit-form textarea[name=text]`), "Note 01: the staging database moved to eu-central"),
		chromedp.SetValue(css(`#edit-form select[name=category]`), "decision"),
		chromedp.SetValue(css(`#edit-form input[name=importance]`), "0.95"),
		chromedp.Submit(css(`#edit-form textarea[name=text]`)), chromedp.WaitVisible(css("#saved")))
	shot("memory")
	var shown schemas.ShowDetails
	call(schemas.OpShow, "main", schemas.ShowRequest{MemoryID: target}, &shown)
	if shown.Memory.Text != "Note 01: the staging database moved to eu-central" || shown.Memory.Category != schemas.CategoryDecision || shown.Memory.Importance != 0.95 {
		t.Fatalf("after the edit the store holds %+v", shown.Memory)
	}

	// Delete, confirmed: gone from the store.
	gone := id(3)
	do("delete", chromedp.Navigate(base+"/memories/"+gone+"/delete?agent=main"), chromedp.WaitVisible(css("#delete-form")),
		chromedp.Click(css(`#delete-form input[name=confirm]`)), chromedp.Submit(css(`#delete-form input[name=confirm]`)),
		chromedp.WaitVisible(css("#memories")))
	if res := call(schemas.OpShow, "main", schemas.ShowRequest{MemoryID: gone}, nil); !res.IsError {
		t.Fatal("the deleted memory is still in the store")
	}

	// Search with every stage's score.
	do("search", chromedp.Navigate(base+"/search?agent=main&q=staging+database"), chromedp.WaitVisible(css("#results")))
	if meters := evalJS[int](t, ctx, `document.querySelectorAll('#results meter').length`); meters < 9 {
		t.Fatalf("search shows %d score bars", meters)
	}
	shot("search")

	// Dead letters: the entry, its payload, a replay that empties it.
	do("dlq", chromedp.Navigate(base+"/dlq"), chromedp.WaitVisible(css("#letters")))
	if got := text("#letters tbody"); !strings.Contains(got, "embedding endpoint timed out") {
		t.Fatalf("DLQ page: %q", got)
	}
	shot("dlq")
	do("dlq entry", chromedp.Click(css("#letters tbody tr td a")), chromedp.WaitVisible(css("#payload")))
	if got := text("#payload"); !strings.Contains(got, "green tea") {
		t.Fatalf("payload: %q", got)
	}
	do("replay", chromedp.Navigate(base+"/dlq"), chromedp.WaitVisible(css("#letters")), chromedp.Click(css(`#letters tbody form button`)),
		chromedp.WaitVisible(css("#done")))
	if done, left := text("#done"), text("#letters tbody"); !strings.Contains(done, "Replayed 1") || !strings.Contains(left, "The DLQ is empty") {
		t.Fatalf("after replay: %q / %q", done, left)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var l schemas.ListDetails
		call(schemas.OpList, "main", schemas.ListRequest{Text: "green tea"}, &l)
		if l.Count == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replayed event was not captured:\n%s", in.logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Distillation and configuration pages.
	do("distill", chromedp.Navigate(base+"/distill"), chromedp.WaitVisible(css("#jobs")))
	shot("distill")
	do("config", chromedp.Navigate(base+"/config"), chromedp.WaitVisible(css("#effective")))
	if eff := text("#effective"); !strings.Contains(eff, `"dataDir"`) {
		t.Fatalf("config page: %q", eff)
	}
	shot("config")
	// Bad input on a page: a clear message (and a 400, which the browser
	// logs as a failed load: that one error is expected).
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/memories?since=2026-02-31"), chromedp.WaitVisible(css("#error-message"))); err != nil {
		t.Fatal(err)
	}
	if msg := text("#error-message"); !strings.Contains(msg, "not a date") {
		t.Fatalf("bad date: %q", msg)
	}
	w.expect("status of 400")
	w.check(t, "the end")
}

// evalJS evaluates a JavaScript expression on the page and decodes its value.
func evalJS[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// `clawmem ui` serves the console against the clawmem running on the data
// dir: it refuses an exposed --listen without a token before binding; its
// pages answer from that instance once signed in with `clawmem ui login`'s
// link, and it stops with its context.
func TestUICommand(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, "")
	serveInProcess(t, dir, node.RoleStore, node.RoleQuery)
	info, ok := instance.ReadRunInfo(dir)
	if !ok {
		t.Fatal("no run file")
	}
	nc, err := adminConn(dir, info.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	res, err := client.NewNATS(nc).Call(context.Background(), schemas.OpStore, "main", schemas.StoreRequest{Text: "The ui command test memory is about herons"})
	if err != nil || res.IsError {
		t.Fatalf("store: %v %+v", err, res)
	}
	// Off loopback without ui.adminToken it refuses before binding: the
	// port, held here, would otherwise answer "address in use".
	held, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := strconv.Itoa(held.Addr().(*net.TCPAddr).Port)
	if code, _, errOut := runCLI(t, "ui", "--data-dir", dir, "--listen", ":"+port); code == 0 || !strings.Contains(errOut, "off loopback: set ui.adminToken") {
		t.Fatalf("ui --listen :%s without a token: %d %s", port, code, errOut)
	}

	logs := &testkit.Buffer{}
	a := &app{stdout: io.Discard, stderr: logs}
	root := a.rootCmd()
	root.SetArgs([]string{"ui", "--data-dir", dir, "--listen", "127.0.0.1:0"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	urlRE := regexp.MustCompile(`console listening" url=(http://127\.0\.0\.1:\d+)`)
	var base string
	waitUntil(t, 20*time.Second, func() error {
		if m := urlRE.FindStringSubmatch(logs.String()); m != nil {
			base = m[1]
			return nil
		}
		return fmt.Errorf("no console yet:\n%s", logs.String())
	})
	// Signed out it shows the login form; the link `clawmem ui login
	// --url` prints signs in.
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	if resp, err := hc.Get(base + "/memories"); err != nil || resp.Request.URL.Path != "/login" {
		t.Fatalf("signed out: %v %v", resp, err)
	}
	code, link, errOut := runCLI(t, "ui", "login", "--data-dir", dir, "--url", base)
	if code != 0 {
		t.Fatalf("ui login: %d %s", code, errOut)
	}
	if resp, err := hc.Get(strings.TrimSpace(link)); err != nil || resp.StatusCode != 200 || resp.Request.URL.Path != "/" {
		t.Fatalf("sign-in link: %v %v", resp, err)
	}
	if resp, _ := hc.Get(strings.TrimSpace(link)); resp.Request.URL.Path != "/login" || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the link worked twice: %d %s", resp.StatusCode, resp.Request.URL)
	}
	if strings.Contains(logs.String(), mustRead(t, filepath.Join(dir, "auth", "console.token"))) {
		t.Fatal("the console token is in the log")
	}
	if !strings.Contains(logs.String(), "clawmem ui login --data-dir "+dir+" --url "+base) {
		t.Fatalf("the log does not say how to sign in:\n%s", logs.String())
	}
	for path, want := range map[string]string{"/": "memories that hold", "/memories?agent=main": "herons"} {
		resp, err := hc.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Fatalf("%s: %d %q", path, resp.StatusCode, body)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ui: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("ui did not stop")
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
