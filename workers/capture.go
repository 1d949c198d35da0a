package workers

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/engine/temporal"
	"github.com/clawmem/clawmem/internal/workpool"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/purge"
)

// CaptureConfig is the auto-capture part of the config.
type CaptureConfig struct {
	CaptureAssistant bool    // also capture the assistant's messages
	MaxChars         int     // captureMaxChars; default 500
	MaxPerTurn       int     // default 3 (seed)
	Importance       float64 // default 0.7
	Dedup            float64 // default 0.95
	Stage            StageConfig
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

func (c CaptureConfig) withDefaults() CaptureConfig {
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
	cfg   CaptureConfig
	route workRoute
	st    stage
	ext   *extractor // nil: rules only
	log   *slog.Logger
}

// NewCapture builds the capture stage.
func NewCapture(js jetstream.JetStream, emb embed.Embedder, cfg CaptureConfig, m *StageMetrics, log *slog.Logger) *Capture {
	cfg = cfg.withDefaults()
	c := &Capture{js: js, emb: emb, cfg: cfg, route: newWorkRoute(cfg.Partitions, cfg.Scopes), log: log}
	if cfg.Extract != nil && cfg.Extract.LLM != nil {
		c.ext = newExtractor(*cfg.Extract, js.Conn(), cfg.Secrets, log)
	}
	c.st = stage{name: schemas.ConsumerCapture, js: js, stream: schemas.StreamEvents,
		subjects: []string{schemas.EventSubject(schemas.KindAgentEnd, "*"), schemas.EventSubject(schemas.KindMessageReceived, "*"),
			schemas.EventSubject(schemas.KindMessageSent, "*")}, cfg: cfg.Stage, handle: c.handle, metrics: m, log: log,
		probe: func(ctx context.Context) error {
			if r := emb.Test(ctx); !r.Success {
				return errors.New(r.Error)
			}
			return nil
		}}
	return c
}

// Run consumes until ctx ends.
func (c *Capture) Run(ctx context.Context) error { return c.st.run(ctx) }

// cursor remembers how much of a session's history was already captured:
// the message count and a fingerprint of the last message, so a history
// that was compacted or rewritten is noticed and read from the start
// (idempotent source ids make that safe).
type cursor struct {
	Count int    `json:"count"`
	Last  string `json:"last"`
}

// turn is what one event contributes.
type turn struct {
	agent, session string
	items          []schemas.CaptureItem
	cursorKey      string
	cursor         cursor
	noCursor       bool // one message (message_received/message_sent): no history to diff
	seq            uint64
	history        []schemas.Message // agent_end: the whole history, diffed in pick
	at             int64             // the event's time (Unix ms): when a message has none
	said           []saidMsg         // the turn's new messages, for smart extraction
}

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
		prev, err := loadCursor(ctx, kv, keys[k])
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

// loadCursor reads a session's stored cursor (zero when none).
func loadCursor(ctx context.Context, kv jetstream.KeyValue, key string) (cursor, error) {
	var cur cursor
	entry, err := kv.Get(ctx, key)
	switch {
	case err == nil:
		_ = json.Unmarshal(entry.Value(), &cur)
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		return cur, fmt.Errorf("read cursor: %w", err)
	}
	return cur, nil
}

// pick selects the capturable messages of t's history after cursor prev
// (all of it when prev does not describe a prefix of it: a compacted or
// rewritten history) and returns t's own cursor.
func (c *Capture) pick(t *turn, prev cursor) cursor {
	start := 0
	if prev.Count > 0 && prev.Count <= len(t.history) && fingerprint(t.history[prev.Count-1]) == prev.Last {
		start = prev.Count
	}
	t.cursor = cursor{Count: len(t.history), Last: fingerprint(t.history[len(t.history)-1])}
	for _, msg := range t.history[start:] {
		if len(t.items) == c.cfg.MaxPerTurn && c.ext == nil {
			break
		}
		said := msg.Timestamp
		if said <= 0 {
			said = t.at
		}
		c.consider(t, msg.Role, msg.Text(), said)
	}
	return t.cursor
}

// emitParallelism bounds concurrent JetStream round trips per batch.
const emitParallelism = 16

func fill(errs []error, err error) []error {
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// read decodes one event: an agent_end's history (pick selects its new
// messages), or a single message's capturable text.
func (c *Capture) read(m jetstream.Msg) (*turn, error) {
	kind, agent, err := schemas.ParseEventSubject(m.Subject())
	if err != nil {
		return nil, Permanent(err)
	}
	var ev schemas.HookEvent
	if err := json.Unmarshal(m.Data(), &ev); err != nil {
		return nil, Permanent(fmt.Errorf("event is not JSON: %w", err))
	}
	if ev.V != schemas.Version {
		return nil, Permanent(fmt.Errorf("event version %d, this worker reads %d", ev.V, schemas.Version))
	}
	if kind == schemas.KindMessageReceived || kind == schemas.KindMessageSent {
		return c.readMessage(kind, agent, ev, m)
	}
	var end schemas.AgentEndEvent
	if err := json.Unmarshal(ev.Event, &end); err != nil {
		return nil, Permanent(fmt.Errorf("agent_end payload: %w", err))
	}
	if !end.Success || len(end.Messages) == 0 {
		return nil, nil
	}
	session := ev.SessionKey
	if session == "" {
		session = ev.SessionID
	}
	t := &turn{agent: agent, session: session, cursorKey: agent + "." + schemas.SubjectToken(session), history: end.Messages, at: ev.Timestamp}
	if md, err := m.Metadata(); err == nil {
		t.seq = md.Sequence.Stream
	}
	return t, nil
}

// readMessage takes one message_received (user) or message_sent
// (assistant) event, as HOOK.md handlers send them where no plugin sees
// agent_end. Each carries one message, so there is no history to diff: the
// stream's Msg-Id and the item's source id keep repeats out.
func (c *Capture) readMessage(kind schemas.EventKind, agent string, ev schemas.HookEvent, m jetstream.Msg) (*turn, error) {
	var me schemas.MessageEvent
	if err := json.Unmarshal(ev.Event, &me); err != nil {
		return nil, Permanent(fmt.Errorf("%s payload: %w", kind, err))
	}
	session := ev.SessionKey
	if session == "" {
		session = ev.SessionID
	}
	t := &turn{agent: agent, session: session, noCursor: true}
	md, err := m.Metadata()
	if err == nil {
		t.seq = md.Sequence.Stream
	}
	// Grouped alone: message events need no ordering against each other.
	t.cursorKey = "message." + strconv.FormatUint(t.seq, 10)
	role := "user"
	if kind == schemas.KindMessageSent {
		role = "assistant"
	}
	c.consider(t, role, me.Content, ev.Timestamp)
	return t, nil
}

// consider adds text, said by role at said (Unix ms; 0 unknown), to the
// turn's items if the capture rules keep it. The time goes into the
// metadata (saidAt) so that "yesterday" resolves against when it was said,
// not when a backlog reached the store.
func (c *Capture) consider(t *turn, role, text string, said int64) {
	if role != "user" && !(c.cfg.CaptureAssistant && role == "assistant") {
		return
	}
	text, ok := c.clean(t, rules.StripEnvelope(text))
	if !ok {
		return
	}
	if c.ext != nil && strings.TrimSpace(text) != "" && len(t.said) < maxSaid {
		t.said = append(t.said, saidMsg{text: retrieve.Truncate(text, 2000), at: said})
	}
	if len(t.items) == c.cfg.MaxPerTurn || !rules.ShouldCapture(text, rules.CaptureOptions{MaxChars: c.cfg.MaxChars}) {
		return
	}
	md := map[string]any{"source": "auto-capture", "sessionKey": t.session, "role": role}
	if said > 0 {
		md[temporal.SaidAtKey] = said
	}
	meta, _ := json.Marshal(md)
	t.items = append(t.items, schemas.CaptureItem{
		SourceID:   SourceID(t.agent, t.session, text),
		Text:       text,
		Category:   rules.DetectCategory(text),
		Importance: c.cfg.Importance,
		Dedup:      c.cfg.Dedup,
		Metadata:   meta,
	})
}

// clean applies secrets.mode to a captured text before anything else sees
// it: the text to use, or false when refuse mode drops it.
func (c *Capture) clean(t *turn, text string) (string, bool) {
	out, fs, err := redact.Apply(c.cfg.Secrets, text)
	if err == nil && c.cfg.Secrets == redact.ModeRefuse && strings.Contains(text, redact.MarkerPrefix) {
		// The hook edge redacted it already: refuse drops it all the same.
		err = redact.ErrSecret
	}
	if err != nil {
		c.log.Info("captured message dropped: it holds a secret and secrets.mode is refuse", "agent", t.agent, "session", t.session,
			"kinds", redact.Kinds(fs))
		return "", false
	}
	return out, true
}

// withoutSecrets applies secrets.mode to items' texts.
func (c *Capture) withoutSecrets(t *turn, items []schemas.CaptureItem) []schemas.CaptureItem {
	out := items[:0]
	for _, it := range items {
		text, ok := c.clean(t, it.Text)
		if !ok {
			continue
		}
		if text != it.Text {
			it.Text = text
			if it.Invalidates == "" {
				it.SourceID = SourceID(t.agent, t.session, "fact:"+text)
			}
		}
		out = append(out, it)
	}
	return out
}

// emit hands the turn's candidates to the store worker, then moves the
// cursor. A crash between the two repeats the publish, which the stream's
// Msg-Id dedup and the items' source ids both absorb.
func (c *Capture) emit(ctx context.Context, kv jetstream.KeyValue, t *turn) error {
	if len(t.items) > 0 {
		if err := c.route.publish(ctx, c.js, schemas.WorkCandidates, t.agent, "capture", "capture-"+strconv.FormatUint(t.seq, 10), t.items); err != nil {
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

// fingerprint identifies a message by role and text.
func fingerprint(m schemas.Message) string { return roleTextHash(m.Role, m.Text()) }

// roleTextHash is the fingerprint of a message's role and text.
func roleTextHash(role, text string) string {
	h := sha256.Sum256([]byte(role + "\x00" + text))
	return hex.EncodeToString(h[:8])
}

// SourceID names a captured text within its agent and session: the same
// text captured again is the same source, so it is stored once.
func SourceID(agent, session, text string) string { return purge.SourceID(agent, session, text) }
