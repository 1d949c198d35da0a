package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/schemas"
)

// ConsolidateOptions tune a consolidation run.
type ConsolidateOptions struct {
	// Scope limits the run to one scope (empty: every scope).
	Scope string
	// MergeMin is the vector score (1/(1+d)) from which two current
	// memories of a scope count as one fact said twice. Default 0.90.
	MergeMin float64
	// ArchiveFloor archives a memory whose decayed importance,
	// importance × 0.5^(ageDays/ArchiveHalfLifeDays), fell below it.
	// 0 (the default) archives nothing.
	ArchiveFloor        float64
	ArchiveHalfLifeDays float64 // default 180
	// DryRun reports what would change and changes nothing.
	DryRun bool
	// Judge, when set (an LLM is configured), decides whether memories
	// that look alike from JudgeMin up are one fact, and writes it once.
	// A group it is unsure of stays apart; when it fails, the run merges
	// what scores MergeMin or more, as without a judge.
	Judge    MergeJudge
	JudgeMin float64 // default 0.85
	// Only, when set, leaves out the memories of scopes it refuses (a
	// partitioned writer consolidates the scopes it writes).
	Only func(scope string) bool
}

// MergeJudge reads memories that look alike and says whether they state
// one fact, and if so the fact written once.
type MergeJudge func(ctx context.Context, texts []string) (same bool, text string, err error)

func (o ConsolidateOptions) withDefaults() ConsolidateOptions {
	if o.MergeMin <= 0 {
		o.MergeMin = 0.90
	}
	if o.ArchiveHalfLifeDays <= 0 {
		o.ArchiveHalfLifeDays = 180
	}
	if o.JudgeMin <= 0 {
		o.JudgeMin = 0.85
	}
	return o
}

// Merge is one group of memories consolidated into one.
type Merge struct {
	Into    string   `json:"into"`    // the merged memory's id
	Text    string   `json:"text"`    // its text
	Sources []string `json:"sources"` // the memories it supersedes
}

// ConsolidateReport says what a run did (or, dry, would do).
type ConsolidateReport struct {
	Scanned  int      `json:"scanned"`
	Merges   []Merge  `json:"merges"`
	Archived []string `json:"archived"`
	DryRun   bool     `json:"dryRun"`
}

// mergeNamespace derives a merged memory's id from its sources, so that a
// rerun after a crash finds the memory it was making.
var mergeNamespace = uuid.MustParse("9a3c1f0e-5b7d-4e2a-8c61-0d4f2e9b7a15")

// mergedFromKey is the metadata key listing a merged memory's sources.
const mergedFromKey = "mergedFrom"

// Consolidate merges near-duplicates the capture path let through into one
// memory that supersedes them, and archives memories whose decayed
// importance fell below a floor. Nothing is deleted: merged and archived
// memories are history, reversible with Restore. A run is idempotent and
// crash-safe: the merged memory's id derives from its sources, and a rerun
// finishes a merge that a crash interrupted instead of starting another.
func (e *Engine) Consolidate(ctx context.Context, o ConsolidateOptions) (ConsolidateReport, error) {
	o = o.withDefaults()
	rep := ConsolidateReport{DryRun: o.DryRun, Merges: []Merge{}, Archived: []string{}}
	f := engine.AllScopes()
	if o.Scope != "" {
		if err := schemas.ValidateScope(o.Scope); err != nil {
			return rep, err
		}
		f = engine.InScopes(o.Scope)
	}
	var mems []schemas.Memory
	err := e.store.Iterate(ctx, engine.IterateOptions{Scopes: f, WithVectors: true}, func(m schemas.Memory) error {
		if m.Current() && (o.Only == nil || o.Only(m.Scope)) {
			mems = append(mems, m)
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	rep.Scanned = len(mems)
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	defer e.wrote(nil)
	merged := map[string]bool{}
	for _, g := range e.judged(ctx, mems, o) {
		m, err := e.merge(ctx, g.members, g.text, o.DryRun)
		if err != nil {
			return rep, err
		}
		rep.Merges = append(rep.Merges, m)
		for _, id := range m.Sources {
			merged[id] = true
		}
	}
	if o.ArchiveFloor > 0 {
		now := e.now()
		for _, m := range mems {
			age := math.Max(0, float64(now.UnixMilli()-m.Timestamp)/float64(24*60*60*1000))
			if merged[m.ID] || m.Importance*math.Pow(0.5, age/o.ArchiveHalfLifeDays) >= o.ArchiveFloor {
				continue
			}
			if !o.DryRun {
				if _, err := e.store.Update(ctx, m.ID, engine.Patch{Invalidate: &engine.Invalidation{At: now.UnixMilli()}}, engine.InScopes(m.Scope)); err != nil {
					return rep, fmt.Errorf("archive %s: %w", m.ID, err)
				}
			}
			rep.Archived = append(rep.Archived, m.ID)
		}
	}
	return rep, nil
}

// mergeGroup is a group to merge, with the text the judge wrote for it
// (empty: the newest member's).
type mergeGroup struct {
	members []schemas.Memory
	text    string
}

// judged is the groups a run merges: without a judge, those scoring
// MergeMin or more; with one, the groups from JudgeMin the judge calls one
// fact, with its text — and where the judge fails, the MergeMin groups
// within them. A merge a crash interrupted is finished whatever the judge
// says now.
func (e *Engine) judged(ctx context.Context, mems []schemas.Memory, o ConsolidateOptions) []mergeGroup {
	if o.Judge == nil {
		var out []mergeGroup
		for _, g := range e.groups(ctx, mems, o.MergeMin) {
			out = append(out, mergeGroup{members: g})
		}
		return out
	}
	var out []mergeGroup
	for _, g := range e.groups(ctx, mems, min(o.JudgeMin, o.MergeMin)) {
		if mergedInto(g) != nil {
			out = append(out, mergeGroup{members: g})
			continue
		}
		texts := make([]string, len(g))
		for i, m := range g {
			// A memory stored before secrets were redacted is not sent to
			// the model as it is.
			texts[i] = e.forModel(m.Text)
		}
		same, text, err := o.Judge(ctx, texts)
		switch {
		case err != nil:
			for _, sub := range e.groups(ctx, g, o.MergeMin) {
				out = append(out, mergeGroup{members: sub})
			}
		case same:
			// The judge's wording becomes a memory: wording that reads as
			// an injection is dropped, and the newest member's text kept.
			if rules.IsInjection(text) {
				text = ""
			}
			out = append(out, mergeGroup{members: g, text: text})
		}
	}
	return out
}

// mergedInto is the member of g that is a merged memory of all the others
// (a merge a crash cut short), or nil.
func mergedInto(g []schemas.Memory) *schemas.Memory {
	for i := range g {
		if srcs := mergedFrom(g[i]); len(srcs) > 0 && containsAll(srcs, g, g[i].ID) {
			return &g[i]
		}
	}
	return nil
}

// groups finds the sets of current memories of one scope that are one fact
// said more than once (vector score ≥ minScore, transitively), in a stable
// order. A merged memory whose sources are still current (a run that
// crashed midway) joins its sources' group.
func (e *Engine) groups(ctx context.Context, mems []schemas.Memory, minScore float64) [][]schemas.Memory {
	parent := make(map[string]string, len(mems))
	byID := make(map[string]schemas.Memory, len(mems))
	for _, m := range mems {
		parent[m.ID], byID[m.ID] = m.ID, m
	}
	var find func(string) string
	find = func(id string) string {
		for parent[id] != id {
			parent[id] = parent[parent[id]]
			id = parent[id]
		}
		return id
	}
	union := func(a, b string) {
		if ra, rb := find(a), find(b); ra != rb {
			parent[max(ra, rb)] = min(ra, rb)
		}
	}
	for _, m := range mems {
		for _, src := range mergedFrom(m) {
			if _, ok := byID[src]; ok {
				union(m.ID, src)
			}
		}
		hits, err := e.store.VectorSearch(ctx, m.Vector, engine.SearchOptions{Scopes: engine.InScopes(m.Scope), Limit: 8, MinScore: minScore})
		if err != nil {
			continue // a failed lookup leaves that memory alone this run
		}
		for _, h := range hits {
			if _, ok := byID[h.Memory.ID]; ok && h.Memory.ID != m.ID {
				union(m.ID, h.Memory.ID)
			}
		}
	}
	sets := map[string][]schemas.Memory{}
	for _, m := range mems {
		r := find(m.ID)
		sets[r] = append(sets[r], m)
	}
	var out [][]schemas.Memory
	for _, g := range sets {
		if len(g) > 1 {
			slices.SortFunc(g, func(a, b schemas.Memory) int { return strings.Compare(a.ID, b.ID) })
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b []schemas.Memory) int { return strings.Compare(a[0].ID, b[0].ID) })
	return out
}

// merge makes (or finishes) the memory a group becomes: the newest text,
// the highest importance, the earliest time it was said, superseding every
// source. A group that holds a merged memory of its other members is a
// merge a crash interrupted: it is finished, not merged again.
func (e *Engine) merge(ctx context.Context, g []schemas.Memory, text string, dry bool) (Merge, error) {
	into := mergedInto(g)
	if into == nil {
		ids := make([]string, len(g))
		for i, m := range g {
			ids[i] = m.ID
		}
		newest := slices.MaxFunc(g, func(a, b schemas.Memory) int {
			if a.Timestamp != b.Timestamp {
				return int(a.Timestamp - b.Timestamp)
			}
			return strings.Compare(a.ID, b.ID)
		})
		m := newest
		m.ID = uuid.NewSHA1(mergeNamespace, []byte(strings.Join(ids, ","))).String()
		for _, s := range g {
			m.Importance = math.Max(m.Importance, s.Importance)
			m.Timestamp = min(m.Timestamp, s.Timestamp)
		}
		m.ValidFrom = m.Timestamp
		if text != "" && e.secrets != redact.ModeOff {
			text, _ = redact.Redact(text)
		}
		if text != "" && text != m.Text {
			m.Text, m.Vector = text, nil
			if !dry {
				vec, err := e.emb.EmbedPassage(ctx, text)
				if err != nil {
					return Merge{}, fmt.Errorf("embed merged text: %w", err)
				}
				m.Vector = vec
			}
		}
		meta := map[string]any{}
		_ = json.Unmarshal(newest.Metadata, &meta)
		meta[mergedFromKey] = ids
		m.Metadata, _ = json.Marshal(meta)
		if !dry {
			if err := e.store.Import(ctx, m); err != nil {
				return Merge{}, fmt.Errorf("write merged memory: %w", err)
			}
		}
		into = &m
	}
	res := Merge{Into: into.ID, Text: into.Text}
	at := e.now().UnixMilli()
	for _, s := range g {
		if s.ID == into.ID {
			continue
		}
		res.Sources = append(res.Sources, s.ID)
		if dry {
			continue
		}
		if _, err := e.store.Update(ctx, s.ID, engine.Patch{Invalidate: &engine.Invalidation{SupersededBy: into.ID, At: at}}, engine.InScopes(s.Scope)); err != nil {
			return res, fmt.Errorf("supersede %s: %w", s.ID, err)
		}
	}
	return res, nil
}

// mergedFrom reads a merged memory's sources from its metadata.
func mergedFrom(m schemas.Memory) []string {
	if !strings.Contains(string(m.Metadata), mergedFromKey) {
		return nil
	}
	var md struct {
		From []string `json:"mergedFrom"`
	}
	_ = json.Unmarshal(m.Metadata, &md)
	return md.From
}

// containsAll reports whether srcs names every memory of g but self.
func containsAll(srcs []string, g []schemas.Memory, self string) bool {
	for _, m := range g {
		if m.ID != self && !slices.Contains(srcs, m.ID) {
			return false
		}
	}
	return true
}
