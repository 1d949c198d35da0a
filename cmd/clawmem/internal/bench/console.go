package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/cmd/clawmem/internal/offline"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/console"
	"github.com/clawmem/clawmem/internal/authdir"
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/query"
)

// ConsoleOptions sizes the console benchmark.
type ConsoleOptions struct {
	N        int // memories stored first
	Requests int // per page
	Logf     func(format string, args ...any)
}

// ConsoleReport is the console's server time per page.
type ConsoleReport struct {
	Memories int           `json:"memories"`
	TargetMs float64       `json:"targetMs"` // the memories list's bound
	Pages    []ConsolePage `json:"pages"`
}

// ConsolePage is one page's server time over the requests.
type ConsolePage struct {
	Name  string  `json:"name"`
	Path  string  `json:"path"`
	P50ms float64 `json:"p50ms"`
	P99ms float64 `json:"p99ms"`
}

// Console stores N memories in a fresh store and measures the web
// console's server time (the handler, called directly) for the memories
// list — first page, a page halfway down by cursor, a text filter, an
// agent's view — a memory's page and a search.
func Console(ctx context.Context, o ConsoleOptions) (ConsoleReport, error) {
	rep := ConsoleReport{TargetMs: 300}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	dir, cfg, err := scratch("console")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.DiscardHandler)
	eng, st, err := storeopen.Engine(ctx, cfg, quiet)
	if err != nil {
		return rep, err
	}
	defer st.Close()
	logf("storing %d memories...", o.N)
	rng := rand.New(rand.NewPCG(3, 9))
	now := time.Now().UnixMilli()
	for done := 0; done < o.N; {
		ms := Memories(rng, done, min(1000, o.N-done), st.Dimensions())
		for i := range ms {
			ms[i].Timestamp = now - int64(done+i)*60_000
		}
		if err := st.Import(ctx, ms...); err != nil {
			return rep, err
		}
		done += len(ms)
	}
	rep.Memories = st.Len()
	c := client.NewLocal(query.New(nil, eng, query.DefaultConfig(), nil, quiet), nil)
	p := offline.NewPipeline(cfg)
	defer p.Close()
	token := authdir.NewToken()
	srv, err := console.New(console.Config{AdminToken: token}, console.Options{Client: c, Pipeline: p, Log: quiet})
	if err != nil {
		return rep, err
	}
	h := srv.Handler()
	// Signed in, as a browser is: the session check is part of each page.
	login := httptest.NewRequestWithContext(ctx, http.MethodPost, "/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	login.Host = console.DefaultListen
	login.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	lrec := httptest.NewRecorder()
	h.ServeHTTP(lrec, login)
	session := lrec.Result().Cookies()
	if lrec.Code != http.StatusSeeOther || len(session) == 0 {
		return rep, fmt.Errorf("console login: %d", lrec.Code)
	}
	// The page halfway down, and a memory to show: read through the
	// operations the pages use.
	res, err := c.Call(ctx, schemas.OpList, "", schemas.ListRequest{Limit: 1, Offset: o.N / 2})
	if err != nil || res.IsError {
		return rep, fmt.Errorf("list: %v %v", err, res.Content)
	}
	var mid schemas.ListDetails
	if err := client.DecodeDetails(res, &mid); err != nil || len(mid.Memories) == 0 {
		return rep, fmt.Errorf("list: %v", err)
	}
	m := mid.Memories[0]
	cursor := fmt.Sprintf("%d:%s", m.Timestamp, m.ID)
	for _, pg := range []ConsolePage{
		{Name: "memories, first page", Path: "/memories"},
		{Name: "memories, halfway by cursor", Path: "/memories?cursor=" + url.QueryEscape(cursor)},
		{Name: "memories, text filter", Path: "/memories?text=deploy+server"},
		{Name: "memories, an agent's view", Path: "/memories?agent=main&category=fact"},
		{Name: "a memory", Path: "/memories/" + m.ID},
		{Name: "search (hybrid recall, explained)", Path: "/search?agent=main&q=deploy+server+config"},
	} {
		var lat []time.Duration
		for i := -2; i < o.Requests; i++ { // two unmeasured warm-ups
			rec := httptest.NewRecorder()
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, pg.Path, nil)
			req.Host = console.DefaultListen
			for _, c := range session {
				req.AddCookie(c)
			}
			t0 := time.Now()
			h.ServeHTTP(rec, req)
			d := time.Since(t0)
			if rec.Code != http.StatusOK {
				body, _ := io.ReadAll(rec.Body)
				return rep, fmt.Errorf("%s: %d %s", pg.Path, rec.Code, strings.TrimSpace(string(body[:min(len(body), 300)])))
			}
			if i >= 0 {
				lat = append(lat, d)
			}
		}
		pg.P50ms, pg.P99ms = Ms(testkit.Percentile(lat, 0.5)), Ms(testkit.Percentile(lat, 0.99))
		rep.Pages = append(rep.Pages, pg)
	}
	return rep, nil
}

// WriteText prints the figures for a person.
func (r ConsoleReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "web console, server time at %d memories (the memories list's target: %.0f ms)\n", r.Memories, r.TargetMs)
	for _, p := range r.Pages {
		fmt.Fprintf(w, "  %-36s p50 %7.2f ms  p99 %7.2f ms\n", p.Name, p.P50ms, p.P99ms)
	}
	return nil
}

// scratch makes a temporary data dir for a bench and its default
// configuration, without the recall cache: the benches repeat their
// queries, and measure what answering one costs. The caller removes the
// dir.
func scratch(name string) (string, *config.Config, error) {
	dir, err := os.MkdirTemp("", "clawmem-bench-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	cfg, err := config.Load("", dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	cfg.Retrieval.RecallCache = 0
	return dir, cfg, nil
}
