package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/engine/temporal"
	"github.com/clawmem/clawmem/internal/promreg"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/purge"
)

// ExtractConfig turns on smart extraction in the capture stage: the LLM
// reads each turn with the agent's most similar memories and decides what
// to add, supersede or invalidate. Off unless an LLM is set.
type ExtractConfig struct {
	LLM distill.LLM
	// TokensPerHour is each agent's budget of LLM tokens per rolling hour;
	// past it, turns take the rule path. Default 200,000; negative: none.
	TokensPerHour int
	// Parallelism bounds concurrent LLM calls. Default 4.
	Parallelism int
	// Similar is how many of the agent's memories, per message, the model
	// is shown (at most 10 in all). Default 5.
	Similar int
	// Timeout bounds one turn's extraction (the recall requests and the
	// LLM call). Default 30 s.
	Timeout time.Duration
	// Registerer takes the extraction metrics (nil: none).
	Registerer prometheus.Registerer
}

func (c ExtractConfig) withDefaults() ExtractConfig {
	if c.TokensPerHour == 0 {
		c.TokensPerHour = 200_000
	}
	if c.Parallelism <= 0 {
		c.Parallelism = 4
	}
	if c.Similar <= 0 {
		c.Similar = 5
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	return c
}

// maxShown bounds the memories one extraction prompt shows.
const maxShown = 10

// maxSaid bounds the messages of one turn sent to the model.
const maxSaid = 12

// extractor is the capture stage's LLM path.
type extractor struct {
	cfg     ExtractConfig
	secrets redact.Mode
	nc      *nats.Conn
	sem     chan struct{}
	budget  *tokenBudget
	log     *slog.Logger
	calls   *prometheus.CounterVec
	tokens  *prometheus.CounterVec
	actions *prometheus.CounterVec
}

func newExtractor(cfg ExtractConfig, nc *nats.Conn, secrets redact.Mode, log *slog.Logger) *extractor {
	cfg = cfg.withDefaults()
	x := &extractor{cfg: cfg, secrets: secrets, nc: nc, sem: make(chan struct{}, cfg.Parallelism), budget: newTokenBudget(cfg.TokensPerHour, time.Hour), log: log,
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "clawmem", Name: "extract_calls_total",
			Help: "Smart-extraction turns, by result (ok, fallback reason)."}, []string{"result"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "clawmem", Name: "extract_tokens_total",
			Help: "LLM tokens spent on smart extraction."}, []string{"kind"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "clawmem", Name: "extract_decisions_total",
			Help: "Smart-extraction decisions applied, by action."}, []string{"action"})}
	if cfg.Registerer != nil {
		x.calls = promreg.Register(cfg.Registerer, x.calls, log, "extraction")
		x.tokens = promreg.Register(cfg.Registerer, x.tokens, log, "extraction")
		x.actions = promreg.Register(cfg.Registerer, x.actions, log, "extraction")
	}
	return x
}

// saidMsg is one message of a turn the model may read.
type saidMsg struct {
	text string
	at   int64 // Unix ms
}

// run replaces t's rule-chosen items with the model's decisions. Any
// failure — no budget, a recall or LLM error, a timeout, an answer refused
// by ParseDecisions — leaves the rule path's items as they are: nothing is
// lost and the event is not retried for it.
func (x *extractor) run(ctx context.Context, t *turn) {
	if len(t.said) == 0 {
		return
	}
	if !x.budget.allow(t.agent) {
		x.fallback(t, "budget", nil)
		return
	}
	x.sem <- struct{}{}
	defer func() { <-x.sem }()
	ctx, cancel := context.WithTimeout(ctx, x.cfg.Timeout)
	defer cancel()
	known, err := x.similar(ctx, t)
	if err != nil {
		x.fallback(t, "recall", err)
		return
	}
	texts := make([]string, len(t.said))
	for i, s := range t.said {
		texts[i] = s.text
	}
	resp, err := x.cfg.LLM.Generate(ctx, distill.ExtractRequest(texts, known))
	x.budget.spend(t.agent, resp.InputTokens+resp.OutputTokens)
	x.tokens.WithLabelValues("input").Add(float64(resp.InputTokens))
	x.tokens.WithLabelValues("output").Add(float64(resp.OutputTokens))
	if err != nil {
		x.fallback(t, "llm", err)
		return
	}
	ds, err := distill.ParseDecisions(resp.Text, known)
	if err != nil {
		x.fallback(t, "refused", err)
		return
	}
	x.calls.WithLabelValues("ok").Inc()
	t.items = x.items(t, ds, known)
}

func (x *extractor) fallback(t *turn, reason string, err error) {
	x.calls.WithLabelValues("fallback-" + reason).Inc()
	x.log.Warn("smart extraction fell back to the capture rules", "agent", t.agent, "session", t.session, "reason", reason, "err", err)
}

// similar asks the query service, as the turn's agent, for the memories
// most like each message: the agent's own view, never another's.
func (x *extractor) similar(ctx context.Context, t *turn) ([]distill.Known, error) {
	var known []distill.Known
	seen := map[string]bool{}
	for _, s := range t.said {
		body, _ := json.Marshal(schemas.RecallRequest{Query: s.text, Limit: x.cfg.Similar})
		msg, err := x.nc.RequestWithContext(ctx, schemas.ServiceSubject(t.agent, schemas.OpRecall), body)
		if err != nil {
			return nil, err
		}
		var res struct {
			Details schemas.RecallDetails `json:"details"`
			IsError bool                  `json:"isError"`
		}
		if err := json.Unmarshal(msg.Data, &res); err != nil {
			return nil, fmt.Errorf("recall reply: %w", err)
		}
		if res.IsError {
			return nil, errors.New("recall answered with an error")
		}
		for _, m := range res.Details.Memories {
			if seen[m.ID] || len(known) == maxShown {
				continue
			}
			seen[m.ID] = true
			// A memory stored before secrets were redacted is not shown
			// to the model as it is.
			text := m.Text
			if x.secrets != redact.ModeOff {
				text, _ = redact.Redact(text)
			}
			known = append(known, distill.Known{Alias: "m" + strconv.Itoa(len(known)+1), ID: m.ID, Text: text, Scope: m.Scope})
		}
	}
	return known, nil
}

// items turns decisions into store candidates: ADD and UPDATE store the
// fact (UPDATE superseding its target), DELETE invalidates its target,
// named with the target's scope (from known) so that the target's writer
// gets it.
func (x *extractor) items(t *turn, ds []distill.Decision, known []distill.Known) []schemas.CaptureItem {
	at := t.at
	if n := len(t.said); n > 0 {
		at = t.said[n-1].at
	}
	out := make([]schemas.CaptureItem, 0, len(ds))
	for _, d := range ds {
		x.actions.WithLabelValues(d.Action).Inc()
		md := map[string]any{"source": "llm-extract", "sessionKey": t.session, "model": x.cfg.LLM.Model()}
		if at > 0 {
			md[temporal.SaidAtKey] = at
		}
		meta, _ := json.Marshal(md)
		it := schemas.CaptureItem{Importance: d.Importance, Metadata: meta}
		switch d.Action {
		case distill.ActionDelete:
			it.SourceID = SourceID(t.agent, t.session, "invalidate:"+d.Target)
			it.Text, it.Invalidates = d.Text, d.Target
			for _, k := range known {
				if k.ID == d.Target {
					it.Scope = k.Scope
				}
			}
		default:
			it.SourceID = SourceID(t.agent, t.session, purge.KindFact+d.Text)
			it.Text, it.Dedup = d.Text, 0.95
			it.Category = schemas.Category(d.Category)
			if !it.Category.Valid() {
				it.Category = rules.DetectCategory(d.Text)
			}
			if d.Action == distill.ActionUpdate {
				it.Supersedes = d.Target
			}
		}
		out = append(out, it)
	}
	return out
}
