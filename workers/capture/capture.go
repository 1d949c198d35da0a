// Package capture is the capture stage: it turns agent_end and message
// events into memory candidates — by the capture rules, or with smart
// extraction by an LLM — and hands them to the store worker's partitions
// on the WORK stream.
package capture

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/internal/workpool"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/stage"
	"github.com/clawmem/clawmem/workers/work"
)

// Config is the auto-capture part of the config.
type Config struct {
	CaptureAssistant bool    // also capture the assistant's messages
	MaxChars         int     // captureMaxChars; default 500
	MaxPerTurn       int     // default 3 (seed)
	Importance       float64 // default 0.7
	Dedup            float64 // default 0.95
	Stage            stage.Config
	// Extract, with an LLM set, runs smart extraction on every turn
	// (nil: the capture rules alone).
	Extract *ExtractConfig
	// Partitions is how many partitions the work stream has (nats.partitions);
	// default schemas.DefaultPartitions.
	Partitions int
	// Scopes are the scope rules (scopes.*) an item's scope, and so its
	// writer, is resolved by; nil: the built-in rules.
	Scopes *scopes.Manager
	// Secrets is what becomes of a credential in a captured message
	// (secrets.mode): redacted before it is embedded, sent to the model or
	// stored (the default), the message dropped (refuse), or kept (off).
	Secrets redact.Mode
}

func (c Config) withDefaults() Config {
	if c.MaxChars <= 0 {
		c.MaxChars = rules.DefaultCaptureMaxChars
	}
	if c.MaxPerTurn <= 0 {
		c.MaxPerTurn = 3
	}
	if c.Importance <= 0 {
		c.Importance = schemas.DefaultImportance
	}
	if c.Dedup <= 0 {
		c.Dedup = 0.95
	}
	if c.Partitions <= 0 {
		c.Partitions = schemas.DefaultPartitions
	}
	if c.Secrets == "" {
		c.Secrets = redact.ModeRedact
	}
	return c
}

// Capture turns agent_end events into memory candidates: it takes only the
// messages of a session it has not seen, keeps what the capture rules
// accept, embeds them in one call per batch and hands them to the store
// worker on the WORK stream.
type Capture struct {
	js    jetstream.JetStream
	emb   embed.Embedder
	cfg   Config
	route work.Route
	st    stage.Stage
	ext   *extractor // nil: rules only
	log   *slog.Logger
}

// New builds the capture stage.
func New(js jetstream.JetStream, emb embed.Embedder, cfg Config, m *stage.Metrics, log *slog.Logger) *Capture {
	cfg = cfg.withDefaults()
	c := &Capture{js: js, emb: emb, cfg: cfg, route: work.NewRoute(cfg.Partitions, cfg.Scopes), log: log}
	if cfg.Extract != nil && cfg.Extract.LLM != nil {
		c.ext = newExtractor(*cfg.Extract, js.Conn(), cfg.Secrets, log)
	}
	c.st = stage.Stage{Name: schemas.ConsumerCapture, JS: js, Stream: schemas.StreamEvents,
		Subjects: []string{schemas.EventSubject(schemas.KindAgentEnd, "*"), schemas.EventSubject(schemas.KindMessageReceived, "*"),
			schemas.EventSubject(schemas.KindMessageSent, "*")}, Config: cfg.Stage, Handle: c.handle, Metrics: m, Log: log,
		Probe: func(ctx context.Context) error {
			if r := emb.Test(ctx); !r.Success {
				return errors.New(r.Error)
			}
			return nil
		}}
	return c
}

// Run consumes until ctx ends.
func (c *Capture) Run(ctx context.Context) error { return c.st.Run(ctx) }

func (c *Capture) handle(ctx context.Context, msgs []jetstream.Msg) []error {
	errs := make([]error, len(msgs))
	kv, err := c.js.KeyValue(ctx, schemas.BucketCursors)
	if err != nil {
		return fill(errs, fmt.Errorf("cursor bucket: %w", err))
	}
	turns := make([]*turn, len(msgs))
	// Decoding is local; cursor reads and emits are JetStream round trips,
	// which, done one after another, would bound throughput more than
	// embedding does: they run in parallel across sessions, in order within
	// one (for the cursor).
	workpool.Run(emitParallelism, len(msgs), func(_, i int) { turns[i], errs[i] = c.read(msgs[i]) })
	bySession, keys := c.group(turns, errs)
	// A session's events in one batch (a backlog after an outage) are
	// diffed one against the other, in stream order, starting from the
	// stored cursor: each contributes only what is new since the previous.
	workpool.Run(emitParallelism, len(keys), func(_, k int) {
		idx := bySession[keys[k]]
		if turns[idx[0]].noCursor {
			return
		}
		prev, err := loadSessionCursor(ctx, kv, keys[k])
		for _, i := range idx {
			if err != nil {
				errs[i] = err
				continue
			}
			prev = c.pick(turns[i], prev)
		}
	})
	if c.ext != nil {
		workpool.Run(emitParallelism, len(turns), func(_, i int) {
			if turns[i] != nil && errs[i] == nil {
				c.ext.run(ctx, turns[i])
				// The model may repeat a secret it was shown.
				turns[i].items = c.withoutSecrets(turns[i], turns[i].items)
			}
		})
	}
	var texts []string
	for _, t := range turns {
		if t != nil {
			for _, it := range t.items {
				texts = append(texts, it.Text)
			}
		}
	}
	if len(texts) > 0 {
		vecs, err := c.emb.EmbedPassages(ctx, texts)
		if err != nil {
			return fill(errs, fmt.Errorf("embed: %w", err))
		}
		k := 0
		for _, t := range turns {
			if t == nil {
				continue
			}
			for j := range t.items {
				t.items[j].Vector = vecs[k]
				k++
			}
		}
	}
	workpool.Run(emitParallelism, len(keys), func(_, k int) {
		for _, i := range bySession[keys[k]] {
			if errs[i] == nil {
				errs[i] = c.emit(ctx, kv, turns[i])
			}
		}
	})
	return errs
}

// group indexes the turns by cursor key, each session's in stream order.
func (c *Capture) group(turns []*turn, errs []error) (map[string][]int, []string) {
	bySession := map[string][]int{}
	var keys []string
	for i, t := range turns {
		if t == nil || errs[i] != nil {
			continue
		}
		if _, ok := bySession[t.cursorKey]; !ok {
			keys = append(keys, t.cursorKey)
		}
		bySession[t.cursorKey] = append(bySession[t.cursorKey], i)
	}
	for _, k := range keys {
		slices.SortStableFunc(bySession[k], func(a, b int) int { return cmp.Compare(turns[a].seq, turns[b].seq) })
	}
	return bySession, keys
}

// emitParallelism bounds concurrent JetStream round trips per batch.
const emitParallelism = 16

func fill(errs []error, err error) []error {
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// emit hands the turn's candidates to the store worker, then moves the
// cursor. A crash between the two repeats the publish, which the stream's
// Msg-Id dedup and the items' source ids both absorb.
func (c *Capture) emit(ctx context.Context, kv jetstream.KeyValue, t *turn) error {
	if len(t.items) > 0 {
		if err := c.route.Publish(ctx, c.js, schemas.WorkCandidates, t.agent, "capture", "capture-"+strconv.FormatUint(t.seq, 10), t.items); err != nil {
			return fmt.Errorf("publish candidates: %w", err)
		}
	}
	if t.noCursor {
		return nil
	}
	val, _ := json.Marshal(t.cursor)
	if _, err := kv.Put(ctx, t.cursorKey, val); err != nil {
		return fmt.Errorf("save cursor: %w", err)
	}
	return nil
}
