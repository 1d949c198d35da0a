package retrieve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/rerank"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/schemas"
)

// Retriever runs the pipeline against a store.
type Retriever struct {
	store    engine.Store
	cfg      Config
	reranker rerank.Reranker // nil: cross-encoder mode falls back to cosine
	now      func() time.Time
	log      *slog.Logger
	// rerankDownUntil (unix ns): until then the cross-encoder is not
	// called, after it failed; the cosine fallback runs instead.
	rerankDownUntil atomic.Int64
	// slots admits retrievals to their computing stages, in the order they
	// arrive (see WithConcurrency).
	slots chan struct{}
}

// RerankDownFor is how long retrieval skips a reranker that failed, so an
// outage (a hang especially) costs each recall nothing rather than the
// rerank timeout.
const RerankDownFor = 10 * time.Second

// Option configures a Retriever.
type Option func(*Retriever)

// WithReranker sets the cross-encoder client.
func WithReranker(r rerank.Reranker) Option { return func(rt *Retriever) { rt.reranker = r } }

// WithClock sets the clock recency and decay are measured against.
func WithClock(now func() time.Time) Option { return func(rt *Retriever) { rt.now = now } }

// WithConcurrency sets how many retrievals compute at once; the others
// wait their turn, first come first served. The default is GOMAXPROCS+1:
// a retrieval is CPU work (the vector scan, BM25, row reads from a
// cached database) with short waits for the disk, and sixteen of them
// sharing two cores each take sixteen times as long, so every one ends
// late, while in turn the first ends after its own work and the last after
// the queue's. In `clawmem bench recall` at 100,000 × 384 with 16 callers
// this cut p99 from 28–40 to 18–21 ms in process and from 31–38 to 23–26
// ms over NATS at the same throughput. The one more than the cores keeps a core busy
// while another retrieval waits for the disk. The embedding of the query
// and a cross-encoder's rerank, calls to other services, are made outside
// a slot.
func WithConcurrency(n int) Option {
	return func(rt *Retriever) { rt.slots = make(chan struct{}, max(n, 1)) }
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(rt *Retriever) { rt.log = l } }

// New validates cfg and builds a retriever.
func New(store engine.Store, cfg Config, opts ...Option) (*Retriever, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Retriever{store: store, cfg: cfg, now: time.Now, log: slog.Default()}
	WithConcurrency(runtime.GOMAXPROCS(0) + 1)(r)
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// Config returns the retriever's configuration.
func (r *Retriever) Config() Config { return r.cfg }

// Query is one retrieval request.
type Query struct {
	Text     string
	Vector   []float32 // the query's embedding (EmbedQuery)
	Scopes   engine.ScopeFilter
	Limit    int              // results wanted; <= 0: 5
	Category schemas.Category // optional filter
	MinScore *float64         // overrides the config's hard minimum
	// Direct skips session-neighbour expansion (auto-recall: its three
	// slots go to memories that match the prompt themselves).
	Direct bool
	// History includes memories that no longer hold (superseded, archived).
	History bool
	// TextOnly runs BM25 alone, with no Vector: the query could not be
	// embedded. Fallback says why; it is passed on in the Result.
	TextOnly bool
	Fallback string
}

// Result is the outcome of a retrieval.
type Result struct {
	Candidates []Candidate `json:"candidates"`
	Mode       string      `json:"mode"`   // hybrid, vector or bm25 (after any fallback)
	Rerank     string      `json:"rerank"` // what the rerank stage did
	// Fallback says why retrieval ran degraded (BM25 alone when the
	// embedder is down); empty when it did not.
	Fallback string `json:"fallback,omitempty"`
}

// ModeBM25 is the Result.Mode of a retrieval that fell back to BM25
// alone because the query could not be embedded.
const ModeBM25 = "bm25"

// MaxLimit bounds the results of one retrieval.
const MaxLimit = 100

// MaxQueryBytes bounds a query's text; longer queries are cut (on a rune
// boundary) rather than refused, since only their words matter.
const MaxQueryBytes = 8 * 1024

// Retrieve runs the whole pipeline.
func (r *Retriever) Retrieve(ctx context.Context, q Query) (Result, error) {
	res := Result{Mode: r.cfg.Mode, Rerank: RerankNone, Fallback: q.Fallback}
	if len(q.Vector) == 0 && !q.TextOnly {
		return res, fmt.Errorf("%w: query vector is empty", schemas.ErrInvalid)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 5
	}
	limit = min(limit, MaxLimit)
	pool := max(r.cfg.CandidatePoolSize, limit)
	text := Truncate(q.Text, MaxQueryBytes)
	hybrid := r.cfg.Mode == ModeHybrid && r.store.HasFullText() && text != ""
	switch {
	case q.TextOnly && (!r.store.HasFullText() || text == ""):
		return res, fmt.Errorf("%w: no query vector, and no full-text search to run instead", schemas.ErrInvalid)
	case q.TextOnly:
		hybrid, res.Mode = true, ModeBM25
	case !hybrid:
		res.Mode = ModeVector
	}
	// History is searched too where the store keeps it: a question about
	// a fact that changed matches the old wording ("Where do I live?" →
	// "I live in Paris"), and the stage below answers with what replaced it.
	_, historian := r.store.(engine.Historian)
	opts := engine.SearchOptions{Scopes: q.Scopes, Limit: pool, History: q.History || historian}
	if q.Category != "" {
		// A category filter is applied after search; fetch more so that
		// the pool still holds enough of that category.
		opts.Limit = pool * 4
	}
	if err := r.enter(ctx); err != nil {
		return res, err
	}
	cs, err := r.candidates(ctx, q, text, hybrid, opts, pool)
	if err != nil {
		r.leave()
		return res, err
	}
	if r.rerankCalls(text, cs) {
		// The cross-encoder is another service: its answer is awaited
		// outside a slot, and the rest of the stages take a turn again.
		r.leave()
		cs, res.Rerank = r.rerank(ctx, text, cs)
		if err := r.enter(ctx); err != nil {
			return res, err
		}
	} else {
		cs, res.Rerank = r.rerank(ctx, text, cs)
	}
	defer r.leave()
	now := r.now()
	// Each stage's score is kept, for explanations.
	cs = Recency(cs, now, r.cfg.RecencyHalfLifeDays, r.cfg.RecencyWeight)
	keep(cs, func(s *Sources, x float64) { s.AfterRecency = x })
	cs = Importance(cs)
	keep(cs, func(s *Sources, x float64) { s.AfterImportance = x })
	cs = LengthNorm(cs, r.cfg.LengthNormAnchor)
	keep(cs, func(s *Sources, x float64) { s.AfterLengthNorm = x })
	cs = TimeDecay(cs, now, r.cfg.TimeDecayHalfLifeDays)
	keep(cs, func(s *Sources, x float64) { s.AfterTimeDecay = x })
	cs = TemporalBoost(cs, text, now, r.cfg.TemporalBoost)
	cs = Whose(cs, text, r.cfg.RelativeFactor)
	sortByScore(cs)
	if !q.History {
		cs = Outdated(cs)
	}
	cs = r.neighbors(ctx, cs, q)
	cs = r.entities(ctx, cs, q, text)
	hardMin := r.cfg.HardMinScore
	if q.MinScore != nil {
		hardMin = *q.MinScore
	}
	cs = MinScore(cs, hardMin)
	if r.cfg.FilterNoise {
		cs = NoiseFilter(cs)
	}
	cs = MMRTop(cs, limit)
	for i := range cs {
		cs[i].Sources.Final = cs[i].Score
	}
	res.Candidates = cs
	return res, nil
}

// enter waits for a slot to compute in (WithConcurrency), or for ctx to
// end.
func (r *Retriever) enter(ctx context.Context) error {
	select {
	case r.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("retrieval waited for its turn: %w", context.Cause(ctx))
	}
}

// leave gives the slot taken by enter to the next retrieval waiting.
func (r *Retriever) leave() { <-r.slots }

// candidates are the searches' hits fused, what holds now in place of
// what no longer does (successors), above the minimum score: at most pool
// of them. Where the store ranks without reading rows
// (engine.RankedSearcher), only the rows of those kept are read: a recall
// keeps 20 of its two searches' up to 40.
func (r *Retriever) candidates(ctx context.Context, q Query, text string, hybrid bool, opts engine.SearchOptions, pool int) ([]Candidate, error) {
	if rs, ok := r.store.(engine.RankedSearcher); ok && hybrid && !q.TextOnly && q.Category == "" {
		byVec, byText, ok, err := rs.RankHybrid(ctx, q.Vector, text, opts)
		if err != nil {
			return nil, err
		}
		if ok {
			return r.fromRanked(ctx, rs, q, byVec, byText, opts, pool)
		}
	}
	vec, bm, err := r.search(ctx, q, text, hybrid, opts)
	if err != nil {
		return nil, err
	}
	return r.fuse(ctx, q, vec, bm, pool), nil
}

// fuse makes candidates of the searches' results (see candidates).
func (r *Retriever) fuse(ctx context.Context, q Query, vec, bm []engine.SearchResult, pool int) []Candidate {
	if q.Category != "" {
		vec, bm = byCategory(vec, q.Category), byCategory(bm, q.Category)
	}
	cs := r.merge(vec, bm)
	for i := range cs {
		if !cs[i].Sources.VectorHit && !q.TextOnly {
			cs[i].Sources.Cosine = cosine(q.Vector, cs[i].Memory.Vector)
		}
	}
	if !q.History {
		cs = r.successors(ctx, cs, q)
	}
	return r.pool(cs, pool)
}

// merge fuses the two searches' results as configured.
func (r *Retriever) merge(vec, bm []engine.SearchResult) []Candidate {
	if r.cfg.BM25Norm == BM25Relative {
		bm = RelativeBM25(bm)
	}
	if r.cfg.Fusion == FusionRRF {
		return FuseRRF(vec, bm, r.cfg.VectorWeight, r.cfg.BM25Weight)
	}
	return Fuse(vec, bm, r.cfg.VectorWeight, r.cfg.BM25Weight)
}

// pool keeps the best n candidates above the minimum score.
func (r *Retriever) pool(cs []Candidate, n int) []Candidate {
	cs = MinScore(cs, r.cfg.MinScore)
	return cs[:min(n, len(cs))]
}

// fromRanked is fuse on hits whose rows are not read yet: they are fused
// by key, and only the rows of the candidates kept are read. A memory
// that no longer holds and matched well enough to lift its successor
// needs the rows of all (successors follows the chain from its row), and
// then every row is read and fuse runs as on results.
func (r *Retriever) fromRanked(ctx context.Context, rs engine.RankedSearcher, q Query, byVec, byText []engine.Ranked, opts engine.SearchOptions, pool int) ([]Candidate, error) {
	keyOf := make(map[string]int64, len(byVec)+len(byText))
	stand := func(rk []engine.Ranked) []engine.SearchResult {
		out := make([]engine.SearchResult, len(rk))
		for i, h := range rk {
			// A stand-in until the row is read: an id no memory has
			// (they never hold a NUL), which fusion joins the two lists
			// by, and the state the index knows.
			m := schemas.Memory{ID: "\x00" + strconv.FormatInt(h.Key, 10)}
			if !h.Current {
				m.InvalidatedAt = 1
			}
			keyOf[m.ID] = h.Key
			out[i] = engine.SearchResult{Memory: m, Score: h.Score, Raw: h.Raw}
		}
		return out
	}
	cs := r.merge(stand(byVec), stand(byText))
	if !q.History {
		if slices.ContainsFunc(cs, r.lifts(cs)) {
			keys := make([]int64, 0, len(keyOf))
			for _, k := range keyOf {
				keys = append(keys, k)
			}
			rows, err := rs.ReadRanked(ctx, keys, opts)
			if err != nil {
				return nil, err
			}
			return r.fuse(ctx, q, rankedResults(byVec, rows), rankedResults(byText, rows), pool), nil
		}
		// No memory that no longer holds lifts another: successors
		// would only drop them.
		cs = slices.DeleteFunc(cs, ended)
	}
	cs = r.pool(cs, pool)
	keys := make([]int64, len(cs))
	for i, c := range cs {
		keys[i] = keyOf[c.Memory.ID]
	}
	rows, err := rs.ReadRanked(ctx, keys, opts)
	if err != nil {
		return nil, err
	}
	out := cs[:0]
	for i, c := range cs {
		m, ok := rows[keys[i]]
		if !ok {
			continue // deleted or changed since it was ranked
		}
		c.Memory = m
		if !c.Sources.VectorHit {
			c.Sources.Cosine = cosine(q.Vector, m.Vector)
		}
		out = append(out, c)
	}
	return out, nil
}

// rankedResults are the hits whose rows were read, as search results.
func rankedResults(rk []engine.Ranked, rows map[int64]schemas.Memory) []engine.SearchResult {
	var out []engine.SearchResult
	for _, h := range rk {
		if m, ok := rows[h.Key]; ok {
			out = append(out, engine.SearchResult{Memory: m, Score: h.Score, Raw: h.Raw})
		}
	}
	return out
}

// search runs the query's vector search and, when hybrid, its full-text
// search: together where the store reads the rows both find once
// (engine.HybridSearcher), else side by side.
func (r *Retriever) search(ctx context.Context, q Query, text string, hybrid bool, opts engine.SearchOptions) (vec, bm []engine.SearchResult, err error) {
	if hs, ok := r.store.(engine.HybridSearcher); ok && hybrid && !q.TextOnly {
		return hs.HybridSearch(ctx, q.Vector, text, opts)
	}
	var (
		bmErr error
		wg    sync.WaitGroup
	)
	if hybrid {
		wg.Go(func() { bm, bmErr = r.store.TextSearch(ctx, text, opts) })
	}
	if !q.TextOnly {
		vec, err = r.store.VectorSearch(ctx, q.Vector, opts)
	}
	wg.Wait()
	if err != nil {
		return nil, nil, err
	}
	return vec, bm, bmErr
}

// RerankCosineFallback is the rerank a cross-encoder configuration runs
// without a rerank endpoint, or when the endpoint fails.
const RerankCosineFallback = "cosine-fallback"

// RerankMode is the rerank this retriever applies — none, lightweight,
// cross-encoder, or cosine-fallback when cross-encoder has no endpoint —
// the one answer stats, start-up checks and results give.
func (r *Retriever) RerankMode() string {
	if r.cfg.Rerank == RerankCrossEncoder && r.reranker == nil {
		return RerankCosineFallback
	}
	return r.cfg.Rerank
}

// rerankCalls reports whether reranking cs calls the cross-encoder's
// endpoint (rather than computing a blend or falling back in process).
func (r *Retriever) rerankCalls(query string, cs []Candidate) bool {
	return r.RerankMode() == RerankCrossEncoder && len(cs) > 0 && query != "" &&
		r.now().UnixNano() >= r.rerankDownUntil.Load()
}

// rerank applies the rerank mode and reports what it did.
func (r *Retriever) rerank(ctx context.Context, query string, cs []Candidate) ([]Candidate, string) {
	mode := r.RerankMode()
	// A single candidate is reranked too: the blend and the fallback change
	// its score, not only the order, and the hard minimum that follows must
	// see the same scale whether one memory matched or twenty.
	if mode == RerankNone || len(cs) == 0 {
		return mark(cs, RerankNone), RerankNone
	}
	in := make([]rerank.Candidate, len(cs))
	docs := make([]string, len(cs))
	fused := make([]float64, len(cs))
	for i, c := range cs {
		in[i] = rerank.Candidate{Fused: c.Score, Cosine: c.Sources.Cosine}
		docs[i] = c.Memory.Text
		fused[i] = c.Score
	}
	var scores []float64
	how := mode
	switch {
	case mode == RerankLightweight:
		scores = rerank.Lightweight(query, docs, fused)
	case !r.rerankCalls(query, cs):
		// No endpoint, no query text, or the endpoint failed lately.
		scores, how = rerank.Fallback(in), RerankCosineFallback
	default:
		got, err := r.reranker.Rerank(ctx, query, docs, len(docs))
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				r.log.Warn("rerank failed; using cosine fallback", "err", err, "skipFor", RerankDownFor)
				r.rerankDownUntil.Store(r.now().Add(RerankDownFor).UnixNano())
			}
			scores, how = rerank.Fallback(in), RerankCosineFallback
		} else {
			scores = rerank.Blend(in, got)
		}
	}
	for i := range cs {
		cs[i].Score = scores[i]
		cs[i].Sources.Reranked = scores[i]
	}
	sortByScore(cs)
	return mark(cs, how), how
}

func mark(cs []Candidate, how string) []Candidate {
	for i := range cs {
		cs[i].Sources.Rerank = how
		if how == RerankNone {
			cs[i].Sources.Reranked = cs[i].Score
		}
	}
	return cs
}

func byCategory(rs []engine.SearchResult, c schemas.Category) []engine.SearchResult {
	out := rs[:0:0]
	for _, r := range rs {
		if r.Memory.Category == c {
			out = append(out, r)
		}
	}
	return out
}

func cosine(a, b []float32) float64 {
	if len(a) == 0 || len(a) != len(b) {
		return 0
	}
	return float64(vecindex.Cosine(a, b))
}

// Truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// neighbors adds, for each of the cfg.NeighborHits best candidates, the
// memories next to it in time in its scope (a conversation's answer is
// often the turn after the one the question matches), scored
// cfg.NeighborFactor × the hit's score, or lifts a candidate already there
// to that score. The store must be an engine.Neighborer; a failed lookup
// only skips that hit.
func (r *Retriever) neighbors(ctx context.Context, cs []Candidate, q Query) []Candidate {
	nb, ok := r.store.(engine.Neighborer)
	if !ok || q.Direct || r.cfg.NeighborHits <= 0 || r.cfg.NeighborsPerSide <= 0 || len(cs) == 0 {
		return cs
	}
	window := int64(r.cfg.NeighborWindowMinutes * float64(time.Minute/time.Millisecond))
	at := positions(cs)
	hits := slices.Clone(cs[:min(r.cfg.NeighborHits, len(cs))])
	points := make([]engine.TimePoint, len(hits))
	for i, hit := range hits {
		points[i] = engine.TimePoint{Scope: hit.Memory.Scope, At: hit.Memory.Timestamp}
	}
	around, err := nb.Neighbors(ctx, points, r.cfg.NeighborsPerSide, window)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("neighbour lookup failed", "err", err)
		}
		return cs
	}
	for i, hit := range hits {
		score := hit.Score * r.cfg.NeighborFactor
		for _, m := range around[i] {
			if q.Category != "" && m.Category != q.Category {
				continue
			}
			if j, ok := at[m.ID]; ok {
				if cs[j].Score < score {
					cs[j].Score, cs[j].Sources.Neighbor = score, hit.Memory.ID
				}
				continue
			}
			at[m.ID] = len(cs)
			cs = append(cs, Candidate{Memory: m, Score: score,
				Sources: Sources{Cosine: cosine(q.Vector, m.Vector), Rerank: hit.Sources.Rerank, Neighbor: hit.Memory.ID}})
		}
	}
	sortByScore(cs)
	return cs
}

// successorFactor scales a superseded memory's score onto the memory that
// replaced it: the match was with the old wording of the same fact.
const successorFactor = 0.95

// maxSuccessorHops bounds the walk from a superseded memory to the one that
// holds now.
const maxSuccessorHops = 8

// successorMinLead is how far a superseded memory's fused score must stand
// above the query's background (background) for it to lift the memory that
// replaced it. Without it, an old fact that matched no better than anything
// else still lent its successor its score: after "I live in Paris" → "I
// moved to Berlin", "dog name" and "which tea do I like" ranked "I moved to
// Berlin" second, above memories that matched as well, because two matches
// at the unrelated level combined into a strong one. The bound is relative
// to the query's own pool, not an absolute score, because the level an
// unrelated memory scores at differs between embedders. Measured on the 86
// fact-change scenarios (testdata/facts, local embedder): the stale fact
// stands 0.03–0.44 (median 0.27) above the background for the scenario's
// own question, and at most 0.04 above it for 95% of 1,275 questions of the
// other scenarios (16 of them clear 0.10). At 0.10, 83 of the 85 own
// questions still lift and recall's first answer stays the current fact as
// often as without the bound.
const successorMinLead = 0.10

// backgroundPool is the fewest candidates the background is taken over: a
// smaller pool (a small store) is padded with unrelated memories, so that
// the median does not rest on the two or three memories that match.
const backgroundPool = 10

// background is what a memory scores for this query whether or not it
// answers it: the median fused score of the candidate pool (history
// included), padded to backgroundPool with the fused score of an unrelated
// memory — a vector hit at cosine 0, 0.5 before the vector weight's scale.
func (r *Retriever) background(cs []Candidate) float64 {
	alpha, _ := weightShares(r.cfg.VectorWeight, r.cfg.BM25Weight)
	unrelated := 0.5 * min(1, alpha/defaultAlpha)
	xs := make([]float64, 0, max(len(cs), backgroundPool))
	for _, c := range cs {
		xs = append(xs, c.Score)
	}
	for len(xs) < backgroundPool {
		xs = append(xs, unrelated)
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// successors replaces each candidate that no longer holds with the memory
// that holds now in its place (following supersededBy), scored
// successorFactor × the old one's score, or lifts that memory if it is a
// candidate already (combining both matches); an archived memory (no
// successor) is dropped. So recall never returns a stale fact, and still
// finds the current one through the words of the old. Only an old fact
// that matched well — successorMinLead above the background — lifts its
// successor; a weak match is dropped and lends nothing.
func (r *Retriever) successors(ctx context.Context, cs []Candidate, q Query) []Candidate {
	at := positions(cs)
	lifts := r.lifts(cs)
	var lifted []Candidate
	broughtIn := map[string]bool{}
	for _, c := range cs {
		if !lifts(c) {
			continue
		}
		cur, ok := r.current(ctx, c.Memory, q.Scopes)
		if !ok || (q.Category != "" && cur.Category != q.Category) || broughtIn[cur.ID] {
			continue
		}
		score := c.Score * successorFactor
		if j, ok := at[cur.ID]; ok {
			// It matched itself and through the fact it replaced: two
			// pieces of evidence for one fact, combined as 1-(1-a)(1-b/2).
			both := 1 - (1-cs[j].Score)*(1-score/2)
			cs[j].Score, cs[j].Sources.Fused, cs[j].Sources.Replaced = both, both, c.Memory.ID
			continue
		}
		broughtIn[cur.ID] = true
		src := c.Sources
		src.Fused, src.Cosine, src.Replaced = score, cosine(q.Vector, cur.Vector), c.Memory.ID
		lifted = append(lifted, Candidate{Memory: cur, Score: score, Sources: src})
	}
	out := slices.DeleteFunc(cs, ended)
	out = append(out, lifted...)
	sortByScore(out)
	return out
}

// lifts reports which of the pool cs, a candidate that no longer holds,
// matched well enough to lend its score to what replaced it:
// successorMinLead above the pool's background.
func (r *Retriever) lifts(cs []Candidate) func(Candidate) bool {
	floor := r.background(cs) + successorMinLead
	return func(c Candidate) bool { return ended(c) && c.Score >= floor }
}

// ended reports that c's memory no longer holds.
func ended(c Candidate) bool { return !c.Memory.Current() }

// current follows m's supersededBy to the memory that holds now, within
// the query's scopes.
func (r *Retriever) current(ctx context.Context, m schemas.Memory, f engine.ScopeFilter) (schemas.Memory, bool) {
	for range maxSuccessorHops {
		if m.SupersededBy == "" {
			return m, false // archived
		}
		next, err := r.store.Get(ctx, m.SupersededBy, f)
		if err != nil {
			return m, false // deleted since, or outside the scopes
		}
		if next.Current() {
			return next, true
		}
		m = next
	}
	return m, false
}
