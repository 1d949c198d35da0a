// Package memory is the engine facade every caller uses — the query
// service, the store worker, the CLI and the MCP server: recall, auto-recall
// context, store with dedup, forget, update, list and stats, each checked
// against the caller's scopes.
package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/schemas"
)

// Dedup thresholds on the vector score scale 1/(1+d) (SPEC §1).
const (
	DedupTool    = 0.98 // memory_store
	DedupCapture = 0.95 // auto-capture, import, distilled lessons
	// A query-based forget (or update) acts on its own only on a clear
	// single match (ConfidentMatch), judged on relevance: the fused
	// vector+BM25 score, before recency, importance and age re-rank.
	//
	// A strong match — relevance at least ForgetMinRelevance — needs a lead
	// of ForgetMinMargin over the next candidate. Measured with real
	// embeddings (USE-lite) on 40 personal memories and 66 forget queries:
	// targeted queries score 0.75–1.0 with margins of 0.10–0.43, vague ones
	// ("my pets", "Prague", "coffee or tea") have margins under 0.09; this
	// deletes 29 of 51 targeted queries' memories and none wrongly where two
	// memories fit equally. The seed's "exactly one above 0.9" fired for 20
	// and never for a clear leader at 0.82–0.89.
	//
	// A match of ForgetClearRelevance to ForgetMinRelevance — where an exact
	// keyword match lands with the local embedder, whose unrelated memories
	// score 0.5 ("dark mode" found "I prefer dark mode in every editor" at
	// 0.77, the runner-up at 0.51) — needs the same lead, and the runner-up
	// may hold at most ForgetMaxRunnerUpShare of the best one's relevance
	// above that unrelated level: a lead is clear relative to how sure the
	// best match is, not only in absolute terms. Measured with the local
	// embedder on 25 personal memories and 40 forget queries: it deletes 22
	// of 28 targeted queries' memories (the strong-match rule alone: 4) and
	// none of the 12 vague ones ("password", whose two matches score 0.84
	// and 0.71, shares 0.61; "editor" and "tea or coffee" best match 0.63–0.66).
	ForgetMinRelevance     = 0.85
	ForgetMinMargin        = 0.10
	ForgetClearRelevance   = 0.70
	ForgetMaxRunnerUpShare = 0.5
	// unrelatedRelevance is what a memory unrelated to the query scores on
	// relevance at the default weights: a vector hit at cosine 0.
	unrelatedRelevance = 0.5
)

// Errors the facade returns besides the store's.
var (
	ErrNoIdentity = errors.New("request has no agent identity")
	ErrRejected   = errors.New("rejected")
)

// Who is the caller. The zero value has no identity and is refused.
type Who struct {
	agent string
	admin bool
}

// Agent is a call on behalf of agent id.
func Agent(id string) Who { return Who{agent: id} }

// Admin is an operator call (CLI, backups): every scope.
func Admin() Who { return Who{admin: true} }

// AgentID returns the agent's id ("" for admin).
func (w Who) AgentID() string { return w.agent }

// IsAdmin reports an admin caller.
func (w Who) IsAdmin() bool { return w.admin }

// Engine ties the store, embedder, retriever and scope rules together.
type Engine struct {
	// writeMu makes a batch's duplicate checks and its insert one step, so
	// concurrent stores of the same text cannot both pass the check.
	writeMu sync.Mutex
	// writes counts the engine's writes; recent holds what the last
	// batches added (see wrote), for batches prepared before them.
	writes atomic.Uint64
	recent [recentWrites]write
	store  engine.Store
	emb    embed.Embedder
	ret    *retrieve.Retriever
	scopes *scopes.Manager
	now    func() time.Time
	// embedDownUntil (unix ns): until then a query is not embedded, after
	// the embedder failed one (recall runs on BM25 alone meanwhile).
	embedDownUntil atomic.Int64
	// secrets is what becomes of a credential in a text to store, and in
	// a query, before it is embedded (secrets.mode).
	secrets redact.Mode
	// recalls keeps recent recall answers (WithRecallCache); nil: none.
	recalls *recallCache
}

// Option configures an Engine.
type Option func(*Engine)

// WithSecrets sets what the engine does with a credential in a text it is
// given (secrets.mode): redact (the default) stores and embeds the text
// with the credential replaced by a marker; refuse rejects the write with
// an error wrapping redact.ErrSecret; off keeps the text as it is. Queries
// are redacted in both redact and refuse modes, so no credential typed
// into a search reaches the embedding provider.
func WithSecrets(m redact.Mode) Option {
	return func(e *Engine) {
		if m != "" {
			e.secrets = m
		}
	}
}

// New builds an engine.
func New(store engine.Store, emb embed.Embedder, ret *retrieve.Retriever, sm *scopes.Manager, opts ...Option) *Engine {
	e := &Engine{store: store, emb: emb, ret: ret, scopes: sm, now: time.Now, secrets: redact.ModeRedact}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Secrets is the engine's secrets mode.
func (e *Engine) Secrets() redact.Mode { return e.secrets }

// cleanText applies the secrets mode to a text to be stored: the text to
// keep, or refuse mode's error.
func (e *Engine) cleanText(text string) (string, error) {
	out, _, err := redact.Apply(e.secrets, text)
	return out, err
}

// cleanMetadata applies the secrets mode to a memory's metadata (a JSON
// object the caller may fill with anything).
func (e *Engine) cleanMetadata(md json.RawMessage) (json.RawMessage, error) {
	if len(md) == 0 || e.secrets == redact.ModeOff {
		return md, nil
	}
	out, n, err := redact.RedactJSON(md)
	switch {
	case err != nil:
		return md, nil // not JSON: the store's own check reports it
	case n > 0 && e.secrets == redact.ModeRefuse:
		return nil, fmt.Errorf("%w (in the metadata); not stored — secrets.mode is refuse", redact.ErrSecret)
	}
	return out, nil
}

// forModel is text as it may be shown to a model or an embedder: with its
// credentials redacted unless secrets.mode is off.
func (e *Engine) forModel(text string) string {
	if e.secrets == redact.ModeOff {
		return text
	}
	out, _ := redact.Redact(text)
	return out
}

// Backend returns the underlying store.
func (e *Engine) Backend() engine.Store { return e.store }

// Embedder returns the embedder.
func (e *Engine) Embedder() embed.Embedder { return e.emb }

// Scopes returns the scope manager.
func (e *Engine) Scopes() *scopes.Manager { return e.scopes }

// Retriever returns the retriever.
func (e *Engine) Retriever() *retrieve.Retriever { return e.ret }

// readFilter is what who may read, narrowed to scope when one is asked for.
func (e *Engine) readFilter(who Who, scope string) (engine.ScopeFilter, error) {
	if who.admin {
		if scope == "" {
			return engine.AllScopes(), nil
		}
		if err := schemas.ValidateScope(scope); err != nil {
			return engine.ScopeFilter{}, err
		}
		return engine.InScopes(scope), nil
	}
	if who.agent == "" {
		return engine.ScopeFilter{}, ErrNoIdentity
	}
	if err := schemas.ValidateAgentID(who.agent); err != nil {
		return engine.ScopeFilter{}, err
	}
	if scope == "" {
		return e.scopes.Filter(who.agent), nil
	}
	if err := schemas.ValidateScope(scope); err != nil {
		return engine.ScopeFilter{}, err
	}
	if !e.scopes.IsAccessible(scope, who.agent) {
		return engine.ScopeFilter{}, fmt.Errorf("%w: agent %q may not use scope %q", engine.ErrScopeDenied, who.agent, scope)
	}
	return engine.InScopes(scope), nil
}

// writeScope is where who's new memory goes.
func (e *Engine) writeScope(who Who, requested string) (string, error) {
	if who.admin {
		if requested == "" {
			return e.scopes.Default(""), nil
		}
		return requested, e.scopes.Validate(requested)
	}
	if who.agent == "" {
		return "", ErrNoIdentity
	}
	return e.scopes.Resolve(who.agent, requested)
}

// TargetScope is where who's new memory asked for requested goes: a
// partitioned deployment routes the write to that scope's writer.
func (e *Engine) TargetScope(who Who, requested string) (string, error) {
	return e.writeScope(who, requested)
}

// Locate finds the memory who names by id or prefix (within scope, when
// set) and says its full id and scope, as a write to it would.
func (e *Engine) Locate(ctx context.Context, who Who, idOrPrefix, scope string) (id, memScope string, err error) {
	f, err := e.readFilter(who, scope)
	if err != nil {
		return "", "", err
	}
	m, err := e.store.Get(ctx, idOrPrefix, f)
	if err != nil {
		return "", "", err
	}
	return m.ID, m.Scope, nil
}

// StoredScopes lists the scopes that hold memories, history included.
func (e *Engine) StoredScopes(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	err := e.store.Iterate(ctx, engine.IterateOptions{Scopes: engine.AllScopes()}, func(m schemas.Memory) error {
		seen[m.Scope] = true
		return nil
	})
	return slices.Sorted(maps.Keys(seen)), err
}

// Match is the memory a query-form forget or update acts on: the
// confident match among who's memories (within scope, when set), or nil
// when there is none.
func (e *Engine) Match(ctx context.Context, who Who, query, scope string) (*schemas.Memory, error) {
	res, err := e.Recall(ctx, who, query, RecallOptions{Limit: 5, Scope: scope})
	if err != nil {
		return nil, err
	}
	if sure := ConfidentMatch(res.Candidates); sure != nil {
		return &sure.Memory, nil
	}
	return nil, nil
}

// RecallOptions tunes Recall.
type RecallOptions struct {
	Limit    int
	Scope    string
	Category schemas.Category
	MinScore *float64
	// Direct leaves out session-neighbour expansion: only memories that
	// match the query themselves (auto-recall's few slots).
	Direct bool
	// History includes memories that no longer hold (superseded, archived).
	History bool
}

// Recall runs hybrid retrieval for who.
func (e *Engine) Recall(ctx context.Context, who Who, query string, o RecallOptions) (retrieve.Result, error) {
	f, err := e.readFilter(who, o.Scope)
	if err != nil {
		return retrieve.Result{}, err
	}
	if o.Category != "" && !o.Category.Valid() {
		return retrieve.Result{}, fmt.Errorf("%w: category %q", schemas.ErrInvalid, o.Category)
	}
	query = strings.ToValidUTF8(query, "")
	if strings.TrimSpace(query) == "" {
		return retrieve.Result{}, fmt.Errorf("%w: query is empty", schemas.ErrInvalid)
	}
	// A credential typed into a search (or an auto-recall prompt) is not
	// sent to the embedding provider.
	query = e.forModel(query)
	var (
		key recallKey
		gen uint64
	)
	if e.recalls != nil {
		// The generation is read before the lookup and the retrieval: a
		// write that completes after this changes it, so the answer
		// computed below cannot outlive that write, even one it raced.
		key, gen = newRecallKey(f, query, o), e.store.WriteGeneration(f)
		if res, ok := e.recalls.get(key, gen); ok {
			return res, nil
		}
	}
	qv, down, err := e.queryVector(ctx, query)
	if err != nil {
		return retrieve.Result{}, fmt.Errorf("embed query: %w", err)
	}
	q := retrieve.Query{Text: query, Vector: qv, Scopes: f, Limit: o.Limit, Category: o.Category, MinScore: o.MinScore,
		Direct: o.Direct, History: o.History}
	if down != nil {
		if !e.store.HasFullText() {
			return retrieve.Result{}, fmt.Errorf("embed query (and this store has no full-text index to fall back on): %w", down)
		}
		q.TextOnly, q.Fallback = true, "embedding unavailable: "+down.Error()
	}
	res, err := e.ret.Retrieve(ctx, q)
	if e.recalls != nil && err == nil && e.whole(ctx, res) {
		e.recalls.add(key, gen, res)
	}
	return res, err
}

// whole reports whether res is the answer the configuration gives, one
// to keep: not a fallback's (BM25 alone while the embedder is down, the
// cosine rerank while the reranker is), and not cut short by ctx, whose
// end some stages meet by skipping their lookups instead of failing.
func (e *Engine) whole(ctx context.Context, res retrieve.Result) bool {
	rerankDown := res.Rerank == retrieve.RerankCosineFallback && e.ret.RerankMode() != retrieve.RerankCosineFallback
	return ctx.Err() == nil && res.Fallback == "" && !rerankDown
}

// QueryEmbedTimeout bounds a query's embedding (or half the time left of
// the caller's deadline, if less): past it, recall answers from BM25.
const QueryEmbedTimeout = 5 * time.Second

// EmbedDownFor is how long recall skips the embedder after it failed a
// query, so an outage costs each recall nothing rather than a timeout.
const EmbedDownFor = 10 * time.Second

// embedderDown says whether a query's embedding failed within
// EmbedDownFor of now, and until when recall skips the embedder: the one
// rule recall and Health both follow.
func (e *Engine) embedderDown(now time.Time) (until time.Time, down bool) {
	u := e.embedDownUntil.Load()
	return time.Unix(0, u), now.UnixNano() < u
}

// queryVector embeds a query. An embedder that is down (a provider's
// failure, schemas.ErrUnavailable), too slow, or failed within the last
// EmbedDownFor yields down instead: the caller falls back to BM25.
func (e *Engine) queryVector(ctx context.Context, query string) (vec []float32, down, err error) {
	now := e.now()
	if until, off := e.embedderDown(now); off {
		return nil, fmt.Errorf("the embedder failed a query %s ago", now.Sub(until.Add(-EmbedDownFor)).Round(time.Millisecond)), nil
	}
	budget := QueryEmbedTimeout
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl)/2)
	}
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	vec, err = e.emb.EmbedQuery(cctx, retrieve.Truncate(query, retrieve.MaxQueryBytes))
	switch {
	case err == nil:
		return vec, nil, nil
	case ctx.Err() != nil:
		return nil, nil, err
	case errors.Is(err, schemas.ErrUnavailable) || cctx.Err() != nil:
		e.embedDownUntil.Store(now.Add(EmbedDownFor).UnixNano())
		if cctx.Err() != nil {
			err = fmt.Errorf("no answer within %s", budget.Round(time.Millisecond))
		}
		return nil, err, nil
	}
	return nil, nil, err
}

// StoreRequest is a memory to store.
type StoreRequest struct {
	Text       string
	Category   schemas.Category // empty: detected from the text
	Scope      string           // empty: the caller's default scope
	Importance *float64         // nil: 0.7
	Metadata   json.RawMessage
	// ID, when set, makes the write idempotent: a memory with this id that
	// exists already is reported as a duplicate of itself.
	ID string
	// Vector, when set, is the text's passage embedding (saves a call).
	Vector []float32
	// Supersedes, when set, is the id (or prefix) of a memory the new one
	// replaces: it stays in the chain as history. Unset, the supersede
	// rules decide (a new value for the same slot of the same subject).
	Supersedes string
	// SupersedesIfCurrent makes Supersedes a hint: a target that is gone,
	// foreign or ended already is ignored and the rules decide (an LLM's
	// decision made on a view of the store that has since moved on).
	SupersedesIfCurrent bool
}

// StoreStatus says what Store did.
type StoreStatus string

// Store outcomes.
const (
	Created   StoreStatus = "created"
	Duplicate StoreStatus = "duplicate"
)

// StoreResult is Store's answer.
type StoreResult struct {
	Status StoreStatus    `json:"status"`
	Memory schemas.Memory `json:"memory"` // the new memory, or the existing duplicate
	Score  float64        `json:"score,omitempty"`
	// Superseded lists the memories the new one replaced.
	Superseded []string `json:"superseded,omitempty"`
}

// Store saves one memory unless a near-duplicate (vector score ≥ dedup)
// already exists where who can see it. Noise and prompt-injection text is
// rejected with ErrRejected, since a memory is replayed into later prompts.
func (e *Engine) Store(ctx context.Context, who Who, r StoreRequest, dedup float64) (StoreResult, error) {
	res, errs, err := e.StoreBatch(ctx, []BatchItem{{Who: who, Req: r, Dedup: dedup}})
	if err != nil {
		return StoreResult{}, err
	}
	return res[0], errs[0]
}

// dedupFilter: an agent's duplicate is anything it can already see; an
// admin's, anything in the target scope.
func (e *Engine) dedupFilter(who Who, scope string) (engine.ScopeFilter, error) {
	if who.admin {
		return engine.InScopes(scope), nil
	}
	return e.readFilter(who, "")
}

func withoutVector(m schemas.Memory) schemas.Memory {
	m.Vector = nil
	return m
}

// ForgetRequest names what to forget: an id (or 8+ char prefix), or a query.
type ForgetRequest struct {
	ID    string
	Query string
	Scope string
}

// ForgetResult is Forget's answer: the deleted id, or candidates to choose from.
type ForgetResult struct {
	Deleted    string               `json:"deleted,omitempty"`
	Candidates []retrieve.Candidate `json:"candidates,omitempty"`
	// Memory is what was deleted (without its vector), for those that
	// also erase where it came from.
	Memory schemas.Memory `json:"-"`
}

// Forget deletes by id, or by query when one candidate is a clear match
// (ConfidentMatch); otherwise it returns the candidates so the caller can
// pick an id.
func (e *Engine) Forget(ctx context.Context, who Who, r ForgetRequest) (ForgetResult, error) {
	f, err := e.readFilter(who, r.Scope)
	if err != nil {
		return ForgetResult{}, err
	}
	if r.ID != "" {
		m, err := e.store.Get(ctx, r.ID, f)
		if err != nil {
			return ForgetResult{}, err
		}
		id, err := e.store.Delete(ctx, m.ID, f)
		e.wrote(nil)
		m.Vector = nil
		return ForgetResult{Deleted: id, Memory: m}, err
	}
	if strings.TrimSpace(r.Query) == "" {
		return ForgetResult{}, fmt.Errorf("%w: give a memory id or a query", schemas.ErrInvalid)
	}
	res, err := e.Recall(ctx, who, r.Query, RecallOptions{Limit: 5, Scope: r.Scope})
	if err != nil {
		return ForgetResult{}, err
	}
	if sure := ConfidentMatch(res.Candidates); sure != nil {
		id, err := e.store.Delete(ctx, sure.Memory.ID, f)
		e.wrote(nil)
		m := sure.Memory
		m.Vector = nil
		return ForgetResult{Deleted: id, Memory: m}, err
	}
	return ForgetResult{Candidates: stripVectors(res.Candidates)}, nil
}

// ConfidentMatch returns the candidate a query-based forget or update may
// act on without asking: the most relevant one, when it leads the next one
// by at least ForgetMinMargin and either its relevance is at least
// ForgetMinRelevance, or it is at least ForgetClearRelevance and the next
// one's relevance above the unrelated level is at most
// ForgetMaxRunnerUpShare of its own; nil otherwise. A lone candidate is
// measured against an unrelated memory. Relevance is the fused retrieval
// score, not the final one: an exact match must not lose its certainty for
// being a week old, and the ranking by final score is not the ranking by
// relevance.
func ConfidentMatch(cs []retrieve.Candidate) *retrieve.Candidate {
	best, next := -1, -1
	for i := range cs {
		switch {
		case best < 0 || cs[i].Sources.Fused > cs[best].Sources.Fused:
			best, next = i, best
		case next < 0 || cs[i].Sources.Fused > cs[next].Sources.Fused:
			next = i
		}
	}
	if best < 0 {
		return nil
	}
	top, second := cs[best].Sources.Fused, unrelatedRelevance
	if next >= 0 {
		second = cs[next].Sources.Fused
	}
	if top-second < ForgetMinMargin {
		return nil
	}
	strong := top >= ForgetMinRelevance
	clear := top >= ForgetClearRelevance && second-unrelatedRelevance <= ForgetMaxRunnerUpShare*(top-unrelatedRelevance)
	if !strong && !clear {
		return nil
	}
	return &cs[best]
}

func stripVectors(cs []retrieve.Candidate) []retrieve.Candidate {
	for i := range cs {
		cs[i].Memory.Vector = nil
	}
	return cs
}

// UpdateRequest changes a memory in place. ID may be an id, a prefix, or —
// when it does not look like one — a query that must single out one memory.
type UpdateRequest struct {
	ID         string
	Text       *string
	Category   *schemas.Category
	Importance *float64
	Scope      string // narrows which memories are considered
}

// UpdateResult is Update's answer: the updated memory, or candidates.
type UpdateResult struct {
	Memory     *schemas.Memory      `json:"memory,omitempty"`
	Candidates []retrieve.Candidate `json:"candidates,omitempty"`
	// Previous is the id of the history copy keeping the old text, when
	// the text changed.
	Previous string `json:"previous,omitempty"`
}

// Update changes text (re-embedded, checked like Store), category or
// importance, keeping id and creation time.
func (e *Engine) Update(ctx context.Context, who Who, r UpdateRequest) (UpdateResult, error) {
	f, err := e.readFilter(who, r.Scope)
	if err != nil {
		return UpdateResult{}, err
	}
	if r.Text == nil && r.Category == nil && r.Importance == nil {
		return UpdateResult{}, fmt.Errorf("%w: nothing to update (give text, category or importance)", schemas.ErrInvalid)
	}
	id := strings.TrimSpace(r.ID)
	if schemas.ValidateIDOrPrefix(strings.ToLower(id)) != nil {
		if id == "" {
			return UpdateResult{}, fmt.Errorf("%w: give a memory id or a query", schemas.ErrInvalid)
		}
		res, err := e.Recall(ctx, who, id, RecallOptions{Limit: 5, Scope: r.Scope})
		if err != nil {
			return UpdateResult{}, err
		}
		// Only a confident match is changed: a lone weak candidate is
		// returned for the caller to confirm, never overwritten.
		sure := ConfidentMatch(res.Candidates)
		if sure == nil {
			return UpdateResult{Candidates: stripVectors(res.Candidates)}, nil
		}
		id = sure.Memory.ID
	}
	p := engine.Patch{Category: r.Category, Importance: r.Importance}
	if r.Category != nil && !r.Category.Valid() {
		return UpdateResult{}, fmt.Errorf("%w: category %q", schemas.ErrInvalid, *r.Category)
	}
	if r.Text != nil {
		text, err := storedText(*r.Text)
		if err != nil {
			return UpdateResult{}, err
		}
		if rules.IsInjection(text) || rules.IsNoise(text) {
			return UpdateResult{}, fmt.Errorf("%w: the new text is noise or looks like prompt injection", ErrRejected)
		}
		if text, err = e.cleanText(text); err != nil {
			return UpdateResult{}, err
		}
		if err := schemas.ValidateText(text); err != nil {
			return UpdateResult{}, err
		}
		// Resolve first so a foreign id costs no embedding call.
		if _, err := e.store.Resolve(ctx, id, f); err != nil {
			return UpdateResult{}, err
		}
		vec, err := e.emb.EmbedPassage(ctx, text)
		if err != nil {
			return UpdateResult{}, fmt.Errorf("embed: %w", err)
		}
		p.Text, p.Vector = &text, vec
	}
	if p.Text != nil {
		return e.updateText(ctx, id, p, f)
	}
	m, err := e.store.Update(ctx, id, p, f)
	e.wrote(nil)
	if err != nil {
		return UpdateResult{}, err
	}
	m = withoutVector(m)
	return UpdateResult{Memory: &m}, nil
}

// ListOptions selects a page of memories.
type ListOptions struct {
	Scope    string
	Category schemas.Category
	Limit    int
	Offset   int
	History  bool // include memories that no longer hold
	// Since, Until, Text, Session and After: see engine.ListOptions.
	Since, Until  int64
	Text, Session string
	After         *engine.ListKey
}

// MaxListLimit bounds one page.
const MaxListLimit = 1000

// List returns a page of who's memories, newest first.
func (e *Engine) List(ctx context.Context, who Who, o ListOptions) ([]schemas.Memory, error) {
	f, err := e.readFilter(who, o.Scope)
	if err != nil {
		return nil, err
	}
	if o.Limit > MaxListLimit {
		o.Limit = MaxListLimit
	}
	if o.Since < 0 || o.Until < 0 || (o.Until != 0 && o.Until <= o.Since) {
		return nil, fmt.Errorf("%w: the time range %d–%d is empty or negative", schemas.ErrInvalid, o.Since, o.Until)
	}
	return e.store.List(ctx, engine.ListOptions{Scopes: f, Category: o.Category, Limit: o.Limit, Offset: o.Offset, History: o.History,
		Since: o.Since, Until: o.Until, Text: o.Text, Session: o.Session, After: o.After})
}

// AddedByDay counts who's memories added on each UTC day from since
// (epoch ms) on, by day ("2006-01-02").
func (e *Engine) AddedByDay(ctx context.Context, who Who, scope string, since int64) (map[string]int, error) {
	f, err := e.readFilter(who, scope)
	if err != nil {
		return nil, err
	}
	return e.store.AddedByDay(ctx, f, since)
}

// Stats is Stats' answer: counts plus what retrieval runs with.
type Stats struct {
	engine.Stats
	Scopes    []string        `json:"accessibleScopes,omitempty"`
	FullText  bool            `json:"hasFtsSupport"`
	Retrieval retrieve.Config `json:"retrieval"`
	// Rerank is the rerank recall applies (Retriever.RerankMode): the
	// configured mode, or cosine-fallback for a cross-encoder without an
	// endpoint.
	Rerank       string            `json:"rerankMode"`
	Embedding    string            `json:"embeddingModel"`
	Dimensions   int               `json:"dimensions"`
	ScopeConfig  scopes.Stats      `json:"scopeStats"`
	EmbedderInfo *embed.CacheStats `json:"embeddingCache,omitempty"`
	// RecallCache is the recall cache's use, when the engine has one.
	RecallCache *RecallCacheStats `json:"recallCache,omitempty"`
	// ByDay is the memories added on each day asked for (StatsRequest.Days).
	ByDay map[string]int `json:"byDay,omitempty"`
	// Index is how the store holds its vectors, when it can tell.
	Index *engine.IndexState `json:"index,omitempty"`
	Health
}

// Stats counts who's memories.
func (e *Engine) Stats(ctx context.Context, who Who, scope string) (Stats, error) {
	f, err := e.readFilter(who, scope)
	if err != nil {
		return Stats{}, err
	}
	st, err := e.store.Stats(ctx, f)
	if err != nil {
		return Stats{}, err
	}
	out := Stats{Stats: st, FullText: e.store.HasFullText(), Retrieval: e.ret.Config(), Rerank: e.ret.RerankMode(), Embedding: e.emb.Model(),
		Dimensions: e.store.Dimensions(), ScopeConfig: e.scopes.Stats()}
	if out.Health, err = e.health(ctx, f); err != nil {
		return Stats{}, err
	}
	if !f.All() {
		out.Scopes = f.Scopes()
	}
	if d, ok := e.store.(engine.Describer); ok {
		is := d.IndexState()
		out.IndexKind, out.IndexTrained = is.Kind, is.Trained
		if f.All() {
			// How the store holds its vectors in full is the operator's business.
			out.Index = &is
		}
	}
	if sp, ok := e.emb.(embed.StatsProvider); ok {
		cs := sp.CacheStats()
		out.EmbedderInfo = &cs
	}
	if rs, ok := e.RecallCacheStats(); ok {
		out.RecallCache = &rs
	}
	return out, nil
}
