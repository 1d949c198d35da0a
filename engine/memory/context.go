package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/engine/temporal"
	"github.com/clawmem/clawmem/schemas"
)

// ContextOptions tunes one auto-recall.
type ContextOptions struct {
	// Timeout bounds the call (0: 1.5 s).
	Timeout time.Duration
	// TokenBudget bounds the block, framing included, in EstimateTokens
	// tokens (0: retrieval.recallTokenBudget).
	TokenBudget int
	// Exclude lists memories the caller injected in its last turns
	// (full ids, at most MaxContextExclude): they are left out unless the
	// prompt asks about them again (AutoRecallRepeatMargin).
	Exclude []string
}

// MaxContextExclude bounds ContextOptions.Exclude: a few turns' blocks.
const MaxContextExclude = 64

// AutoRecallRepeatMargin is how much further than the gate's margin
// (retrieval.autoRecallMinMargin) a memory the caller has just injected
// must stand above the median of the prompt's matches (AutoRecallPick's
// pool, on retrieve.MatchScore) to go into the block again: the prompt
// asks about it once more, rather than touching its topic. Measured with
// the local embedder on two small stores: prompts that ask about a
// memory, alone or with two others ("Do you remember my dog, my coffee
// order and …"), put it 0.15–0.27 above the median; prompts on its topic
// ("Can you draft the billing invoice email?" for "We picked PostgreSQL
// for the billing database") 0.11–0.12. An absolute score cannot say it:
// a question asked word for word scores 0.72 with the local embedder,
// below a loose match with semantic embeddings.
const AutoRecallRepeatMargin = 0.14

// ContextResult is auto-recall's answer.
type ContextResult struct {
	Block string `json:"prependContext"`
	// Memories are the recalled memories in the block, Core its core facts.
	Memories []retrieve.Candidate `json:"memories,omitempty"`
	Core     []schemas.Memory     `json:"core,omitempty"`
	Skipped  string               `json:"skipped,omitempty"` // why retrieval did not run
	TimedOut bool                 `json:"timedOut,omitempty"`
	Fallback string               `json:"fallback,omitempty"` // why it ran on BM25 alone
}

// Context is auto-recall: it skips retrieval for prompts that need no
// memory, retrieves the direct matches and keeps at most 3 that pass
// AutoRecallPick (retrieval.autoRecallMinScore and autoRecallMinMargin),
// less those o.Exclude names unless the prompt asks about them again.
// Before them come up to retrieval.coreFacts core facts (rules.IsCore:
// the user's name, languages and standing instructions), newest first,
// whatever the prompt, excluded or not. It formats the untrusted
// <relevant-memories> block within the token budget. It returns within
// the timeout whatever happens, with an empty block if the lookups did not
// finish; the agent's turn never waits longer.
func (e *Engine) Context(ctx context.Context, who Who, prompt string, o ContextOptions) (ContextResult, error) {
	f, err := e.readFilter(who, "")
	if err != nil {
		return ContextResult{}, err
	}
	cfg := e.ret.Config()
	budget, exclude, err := contextLimits(o, cfg)
	if err != nil {
		return ContextResult{}, err
	}
	clean := rules.StripEnvelope(strings.ToValidUTF8(prompt, ""))
	skip := clean == "" || rules.ShouldSkipRetrieval(clean)
	if skip && cfg.CoreFacts == 0 {
		return ContextResult{Skipped: "prompt needs no memory"}, nil
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 1500 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type answer struct {
		res  retrieve.Result
		core []schemas.Memory
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		var a answer
		if cfg.CoreFacts > 0 {
			a.core, a.err = e.store.List(ctx, engine.ListOptions{Scopes: f, Limit: cfg.CoreFacts, Core: true})
		}
		if a.err == nil && !skip {
			a.res, a.err = e.Recall(ctx, who, clean, RecallOptions{Limit: AutoRecallPool, Direct: true})
			a.res.Candidates = pickRecalled(a.res.Candidates, cfg, exclude, a.core)
		}
		done <- a
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		return ContextResult{TimedOut: true}, nil
	}
	if a.err != nil {
		if ctx.Err() != nil {
			return ContextResult{TimedOut: true}, nil
		}
		return ContextResult{}, a.err
	}
	ms := make([]rules.ContextMemory, 0, len(a.core)+len(a.res.Candidates))
	for _, m := range a.core {
		ms = append(ms, contextMemory(m, 0, true))
	}
	for _, c := range a.res.Candidates {
		ms = append(ms, contextMemory(c.Memory, c.Score, false))
	}
	block, kept := rules.FitRelevantMemories(ms, budget)
	res := ContextResult{Block: block, Fallback: a.res.Fallback}
	for _, i := range kept {
		if i < len(a.core) {
			res.Core = append(res.Core, a.core[i])
		} else {
			res.Memories = append(res.Memories, a.res.Candidates[i-len(a.core)])
		}
	}
	if skip {
		res.Skipped = "prompt needs no memory"
	}
	return res, nil
}

// contextLimits checks o's budget and exclusions: the budget to use and
// the excluded ids as a set.
func contextLimits(o ContextOptions, cfg retrieve.Config) (int, map[string]bool, error) {
	switch {
	case o.TokenBudget < 0 || o.TokenBudget > retrieve.MaxRecallTokenBudget:
		return 0, nil, fmt.Errorf("%w: tokenBudget %d: allowed range 0 (the configured %d) to %d", schemas.ErrInvalid,
			o.TokenBudget, cfg.RecallTokenBudget, retrieve.MaxRecallTokenBudget)
	case len(o.Exclude) > MaxContextExclude:
		return 0, nil, fmt.Errorf("%w: exclude has %d ids, at most %d", schemas.ErrInvalid, len(o.Exclude), MaxContextExclude)
	}
	exclude := make(map[string]bool, len(o.Exclude))
	for _, id := range o.Exclude {
		if !schemas.IsUUID(id) {
			return 0, nil, fmt.Errorf("%w: exclude holds %q, not a memory id", schemas.ErrInvalid, id)
		}
		exclude[strings.ToLower(id)] = true
	}
	budget := o.TokenBudget
	if budget == 0 {
		budget = cfg.RecallTokenBudget
	}
	return budget, exclude, nil
}

// pickRecalled is the gate (AutoRecallPick on match scores) less the
// memories shown as core facts, and less the excluded ones, unless the
// prompt asks about one again (AutoRecallRepeatMargin).
func pickRecalled(cs []retrieve.Candidate, cfg retrieve.Config, exclude map[string]bool, core []schemas.Memory) []retrieve.Candidate {
	scores := make([]float64, len(cs))
	for i, c := range cs {
		scores[i] = retrieve.MatchScore(c, cfg) // the gate weighs the match, not the order
	}
	median := poolMedian(scores)
	picked := make([]retrieve.Candidate, 0, rules.MaxContextMemories)
	for _, i := range AutoRecallPick(scores, cfg.AutoRecallMinScore, cfg.AutoRecallMinMargin) {
		id := cs[i].Memory.ID
		askedAgain := scores[i]-median >= cfg.AutoRecallMinMargin+AutoRecallRepeatMargin
		if exclude[id] && !askedAgain || slices.ContainsFunc(core, func(m schemas.Memory) bool { return m.ID == id }) {
			continue
		}
		picked = append(picked, cs[i])
	}
	return picked
}

func contextMemory(m schemas.Memory, score float64, core bool) rules.ContextMemory {
	return rules.ContextMemory{Category: m.Category, Scope: m.Scope, Text: m.Text, Score: score, Core: core,
		Dates: temporal.NoteFor(m.Metadata, m.Text, m.Timestamp)}
}

// AutoRecallPool is how many directly matching memories auto-recall
// weighs against each other.
const AutoRecallPool = 10

// autoRecallPad is the score a missing candidate counts as when fewer than
// AutoRecallPool memories match (a small store): about what an unrelated
// memory scores on clawmem's scale (vector score 0.5, × importance).
const autoRecallPad = 0.45

// AutoRecallPick chooses, from recalled scores in rank order, the indexes
// of at most rules.MaxContextMemories memories for the auto-recall block:
// those scoring at least minScore and standing at least minMargin above the
// median of the pool (padded to AutoRecallPool with autoRecallPad). A clear
// match stands out from the rest of what a query brings up; for a question
// about something never said, everything scores alike.
func AutoRecallPick(scores []float64, minScore, minMargin float64) []int {
	median := poolMedian(scores)
	var out []int
	for i, sc := range scores {
		if len(out) == rules.MaxContextMemories {
			break
		}
		if sc >= minScore && sc-median >= minMargin {
			out = append(out, i)
		}
	}
	return out
}

// poolMedian is the median of the first AutoRecallPool scores, padded to
// AutoRecallPool with autoRecallPad.
func poolMedian(scores []float64) float64 {
	pool := append(make([]float64, 0, AutoRecallPool), scores[:min(len(scores), AutoRecallPool)]...)
	for len(pool) < AutoRecallPool {
		pool = append(pool, autoRecallPad)
	}
	slices.Sort(pool)
	return (pool[AutoRecallPool/2-1] + pool[AutoRecallPool/2]) / 2
}
