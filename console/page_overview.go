package console

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/lessons"
)

type overviewView struct {
	Live   liveView
	Agents []count
	Scopes []count
	Cats   []count
	Chart  chart
}

type count struct {
	Name string
	N    int
}

type liveView struct {
	At        string
	Total     int
	History   int
	Status    *client.Status
	StatusErr string
	Waiting   uint64
	Handling  int
	Jobs      []lessons.Distillation
	Checks    []StartupCheck
	ChecksAt  string
	HasChecks bool
	Index     *schemas.IndexState
	Err       string
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	var st schemas.StatsDetails
	if err := s.call(r.Context(), schemas.OpStats, "", schemas.StatsRequest{Days: chartDays}, &st); err != nil {
		s.failWith(w, r, err)
		return
	}
	v := overviewView{Live: s.liveState(r.Context(), &st), Chart: dayChart(st.ByDay, s.o.Now(), chartDays)}
	for scope, n := range st.ByScope {
		if a, ok := strings.CutPrefix(scope, "agent:"); ok {
			v.Agents = append(v.Agents, count{a, n})
		}
	}
	v.Agents, v.Scopes, v.Cats = sortCounts(v.Agents), countsOf(st.ByScope), countsOf(st.ByCategory)
	s.render(w, r, http.StatusOK, "overview", v)
}

func countsOf(m map[string]int) []count {
	var out []count
	for k, n := range m {
		out = append(out, count{k, n})
	}
	return sortCounts(out)
}

func sortCounts(cs []count) []count {
	slices.SortFunc(cs, func(a, b count) int { return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Name, b.Name)) })
	return cs
}

// liveState is the part of the overview that refreshes itself: counts,
// the pipeline's lag, the dead letters, distillation, start-up checks and
// the index. st, when given, is stats already read.
func (s *Server) liveState(ctx context.Context, st *schemas.StatsDetails) liveView {
	v := liveView{At: s.o.Now().UTC().Format("15:04:05 UTC")}
	if st == nil {
		st = &schemas.StatsDetails{}
		if err := s.call(ctx, schemas.OpStats, "", schemas.StatsRequest{}, st); err != nil {
			v.Err = err.Error()
		}
	}
	v.Total, v.History, v.Index = st.Total, st.History, st.Index
	pctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if status, err := s.o.Pipeline.Status(pctx); err != nil {
		v.StatusErr = err.Error()
	} else {
		v.Status = &status
	}
	v.Waiting, v.Handling, _ = s.o.Pipeline.DistillQueue(pctx)
	if jobs, err := s.o.Pipeline.DistillJobs(pctx, "", ""); err == nil {
		v.Jobs = jobs[:min(len(jobs), 5)]
	}
	if s.o.StartupChecks != nil {
		var at time.Time
		v.Checks, at, v.HasChecks = s.o.StartupChecks()
		v.ChecksAt = "Ran " + at.UTC().Format("2006-01-02 15:04 UTC")
	}
	return v
}

// live streams the overview's live part every few seconds (server-sent
// events) until the browser goes.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		s.fail(w, r, http.StatusInternalServerError, "Streaming is not supported here.")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	t := time.NewTicker(liveEvery)
	defer t.Stop()
	for {
		var b strings.Builder
		if err := s.pages["overview"].ExecuteTemplate(&b, "live", s.liveState(r.Context(), nil)); err != nil {
			s.o.Log.Error("console: live render", "err", err)
			return
		}
		for line := range strings.SplitSeq(b.String(), "\n") {
			fmt.Fprintf(w, "data: %s\n", line)
		}
		fmt.Fprint(w, "\n")
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}

// liveEvery is how often the overview refreshes itself.
var liveEvery = 5 * time.Second

// chart is a bar chart of memories added per day, drawn as SVG.
type chart struct {
	Bars      []bar
	Max       int
	Width     int
	Height    int
	FirstDay  string
	LastDay   string
	TotalDays int
	Total     int
}

type bar struct {
	X, Y, W, H int
	Day        string
	N          int
}

func dayChart(byDay map[string]int, now time.Time, days int) chart {
	c := chart{Width: 8 * days, Height: 80, TotalDays: days}
	today := now.UTC().Truncate(24 * time.Hour)
	for _, n := range byDay {
		c.Max = max(c.Max, n)
		c.Total += n
	}
	for i := range days {
		day := today.AddDate(0, 0, i-days+1).Format(time.DateOnly)
		n := byDay[day]
		h := 0
		if c.Max > 0 {
			h = (n*(c.Height-2) + c.Max - 1) / c.Max
		}
		c.Bars = append(c.Bars, bar{X: 8 * i, Y: c.Height - h, W: 6, H: h, Day: day, N: n})
	}
	c.FirstDay, c.LastDay = c.Bars[0].Day, c.Bars[len(c.Bars)-1].Day
	return c
}

// ---- memories ----
