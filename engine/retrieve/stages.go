package retrieve

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/engine/temporal"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/schemas"
)

// Sources records where a candidate's score came from, for explanation.
type Sources struct {
	Vector    float64 `json:"vector"`    // vector score 1/(1+d); 0 when not a vector hit
	VectorHit bool    `json:"vectorHit"` //
	BM25      float64 `json:"bm25"`      // normalised BM25; 0 when not a BM25 hit
	BM25Hit   bool    `json:"bm25Hit"`
	Fused     float64 `json:"fused"`
	Reranked  float64 `json:"reranked"` // score after the rerank stage
	Rerank    string  `json:"rerank"`   // how it was reranked: cross-encoder, cosine-fallback, lightweight, none
	// The score after each later stage in turn: the recency boost, the
	// importance weight, length normalisation and time decay (a stage
	// that is off leaves it as it was). Final follows the temporal boost.
	AfterRecency    float64 `json:"afterRecency"`
	AfterImportance float64 `json:"afterImportance"`
	AfterLengthNorm float64 `json:"afterLengthNorm"`
	AfterTimeDecay  float64 `json:"afterTimeDecay"`
	Cosine          float64 `json:"cosine"` // cosine(query, memory)
	Final           float64 `json:"final"`
	// Neighbor is the id of the recalled memory this one was brought in
	// next to (session-neighbour expansion); its score derives from that one.
	Neighbor string `json:"neighbor,omitempty"`
	// Entity is the name this memory was brought in by: a recalled
	// memory gave it and the query did not (the entity stage).
	Entity string `json:"entity,omitempty"`
	// Temporal is set when the temporal stage lifted the candidate: the
	// query asks when and the memory carries a date, or both name one time.
	Temporal bool `json:"temporal,omitempty"`
	// Relative is set when the memory names a relative, a friend or a
	// colleague and was lowered since the query asks about the asker.
	Relative bool `json:"relative,omitempty"`
	// Replaced is the id of the superseded memory the query matched, when
	// this one was brought in as the fact that replaced it.
	Replaced string `json:"replaced,omitempty"`
	// Outdated is the id of a newer memory among the results that tells
	// this one changed ("Sold the Corvano and got a Hallis EV" for "I
	// drive a Corvano"); the newer one ranks above it.
	Outdated string `json:"outdated,omitempty"`
}

// String is the sources on one line, as the CLI's --explain prints them,
// ending with what brought the memory in when its own match did not: the
// superseded memory it replaced, the hit it is a neighbour of, the
// temporal lift; and a newer memory that tells it changed.
func (s *Sources) String() string {
	line := fmt.Sprintf("vector %s  bm25 %s  fused %.3f  reranked %.3f (%s)  final %.3f  cosine %.3f",
		hitText(s.VectorHit, s.Vector), hitText(s.BM25Hit, s.BM25), s.Fused, s.Reranked, s.Rerank, s.Final, s.Cosine)
	if s.Replaced != "" {
		line += "  replaced " + s.Replaced[:min(8, len(s.Replaced))]
	}
	if s.Neighbor != "" {
		line += "  neighbour of " + s.Neighbor[:min(8, len(s.Neighbor))]
	}
	if s.Entity != "" {
		line += "  names " + s.Entity
	}
	if s.Temporal {
		line += "  temporal"
	}
	if s.Relative {
		line += "  another person's"
	}
	if s.Outdated != "" {
		line += "  outdated by " + s.Outdated[:min(8, len(s.Outdated))]
	}
	return line
}

// ScorePlaces is the decimal places a reply keeps of a score (RoundScore).
const ScorePlaces = 4

// RoundScore is x to ScorePlaces decimals, as replies carry scores: a
// difference past the fourth decimal ranks nothing a reader can see, and
// "0.8369" reads (and encodes, and parses) more cheaply than
// "0.836892750723073".
func RoundScore(x float64) float64 {
	const scale = 1e4 // 10^ScorePlaces
	return math.Round(x*scale) / scale
}

// Rounded is s with its scores rounded by RoundScore, as replies carry
// them.
func (s Sources) Rounded() Sources {
	for _, f := range []*float64{&s.Vector, &s.BM25, &s.Fused, &s.Reranked, &s.AfterRecency,
		&s.AfterImportance, &s.AfterLengthNorm, &s.AfterTimeDecay, &s.Cosine, &s.Final} {
		*f = RoundScore(*f)
	}
	return s
}

// positions maps each candidate's memory id to its index in cs, for the
// stages that bring memories in or lift those already there.
func positions(cs []Candidate) map[string]int {
	at := make(map[string]int, len(cs))
	for i, c := range cs {
		at[c.Memory.ID] = i
	}
	return at
}

// keep records each candidate's score as a stage left it.
func keep(cs []Candidate, set func(*Sources, float64)) {
	for i := range cs {
		set(&cs[i].Sources, cs[i].Score)
	}
}

// hitText is a score that counted, or a dash for a list it was not in.
func hitText(ok bool, v float64) string {
	if !ok {
		return "  -  "
	}
	return fmt.Sprintf("%.3f", v)
}

// Candidate is one memory moving through the pipeline.
type Candidate struct {
	Memory  schemas.Memory `json:"memory"`
	Score   float64        `json:"score"`
	Sources Sources        `json:"sources"`
}

// weightShares splits the configured weights into the vector share α and
// the BM25 share β = 1-α; the seed's defaults give α=0.7, β=0.3.
func weightShares(vectorWeight, bm25Weight float64) (alpha, beta float64) {
	sum := vectorWeight + bm25Weight
	if sum <= 0 {
		return 1, 0
	}
	return vectorWeight / sum, bm25Weight / sum
}

// Default shares: the seed's fusion constants are calibrated to them.
const (
	defaultAlpha = 0.7
	defaultBeta  = 0.3
	bm25Floor    = 0.5
)

// Fuse merges vector and BM25 hits. With α, β the weight shares:
//
//	vector only: v·min(1, α/0.7)
//	BM25 only:   max(b, 0.5)·min(1, β/0.3)
//	both:        max(v·min(1, α/0.7)·(1 + 0.5·β), BM25-only score)
//
// At the seed's 0.7/0.3 this is exactly the seed's fusion (v; max(b,0.5);
// v + 0.15·v); moving weight from one side scales that side down, so the
// weights really act, unlike in the plugin where they are dead config.
func Fuse(vec, bm25 []engine.SearchResult, vectorWeight, bm25Weight float64) []Candidate {
	alpha, beta := weightShares(vectorWeight, bm25Weight)
	vScale := math.Min(1, alpha/defaultAlpha)
	bScale := math.Min(1, beta/defaultBeta)
	byID := make(map[string]int, len(vec)+len(bm25))
	out := make([]Candidate, 0, len(vec)+len(bm25))
	for _, r := range vec {
		if _, dup := byID[r.Memory.ID]; dup {
			continue
		}
		byID[r.Memory.ID] = len(out)
		out = append(out, Candidate{Memory: r.Memory, Sources: Sources{Vector: r.Score, VectorHit: true, Cosine: r.Raw}})
	}
	for _, r := range bm25 {
		if i, ok := byID[r.Memory.ID]; ok {
			if !out[i].Sources.BM25Hit {
				out[i].Sources.BM25, out[i].Sources.BM25Hit = r.Score, true
			}
			continue
		}
		byID[r.Memory.ID] = len(out)
		out = append(out, Candidate{Memory: r.Memory, Sources: Sources{BM25: r.Score, BM25Hit: true}})
	}
	for i := range out {
		s := &out[i].Sources
		var f float64
		switch {
		case s.VectorHit && s.BM25Hit:
			f = math.Max(s.Vector*vScale*(1+0.5*beta), math.Max(s.BM25, bm25Floor)*bScale)
		case s.VectorHit:
			f = s.Vector * vScale
		default:
			f = math.Max(s.BM25, bm25Floor) * bScale
		}
		s.Fused = clamp01(f)
		out[i].Score = s.Fused
	}
	sortByScore(out)
	return out
}

// Fusion modes (retrieval.fusion) and BM25 normalisations
// (retrieval.bm25Norm).
const (
	FusionBlend  = "blend"    // the seed's score blend (Fuse)
	FusionRRF    = "rrf"      // reciprocal rank fusion (FuseRRF)
	BM25Sigmoid  = "sigmoid"  // the store's normalised score
	BM25Relative = "relative" // raw BM25 over the best hit's
)

// RRFK is reciprocal rank fusion's rank offset.
const RRFK = 60

// FuseRRF merges by rank instead of score: each list adds
// weight/(RRFK + rank) (rank from 1), with the weight shares α and β, and
// the sum is scaled so that first place in both lists scores 1 — the scale
// later stages (rerank blend, recency) expect.
func FuseRRF(vec, bm25 []engine.SearchResult, vectorWeight, bm25Weight float64) []Candidate {
	alpha, beta := weightShares(vectorWeight, bm25Weight)
	cs := Fuse(vec, bm25, vectorWeight, bm25Weight) // merge and sources
	rank := func(rs []engine.SearchResult) map[string]int {
		out := make(map[string]int, len(rs))
		for i, r := range rs {
			if _, dup := out[r.Memory.ID]; !dup {
				out[r.Memory.ID] = i + 1
			}
		}
		return out
	}
	vr, br := rank(vec), rank(bm25)
	best := (alpha + beta) / (RRFK + 1)
	for i := range cs {
		var f float64
		if r, ok := vr[cs[i].Memory.ID]; ok {
			f += alpha / float64(RRFK+r)
		}
		if r, ok := br[cs[i].Memory.ID]; ok {
			f += beta / float64(RRFK+r)
		}
		cs[i].Score = clamp01(f / best)
		cs[i].Sources.Fused = cs[i].Score
	}
	sortByScore(cs)
	return cs
}

// RelativeBM25 rescales BM25 hits to their raw score over the best hit's,
// instead of the store's sigmoid (which puts most hits between 0.75 and 0.9).
func RelativeBM25(bm25 []engine.SearchResult) []engine.SearchResult {
	var top float64
	for _, r := range bm25 {
		top = math.Max(top, r.Raw)
	}
	if top <= 0 {
		return bm25
	}
	out := slices.Clone(bm25)
	for i := range out {
		out[i].Score = clamp01(out[i].Raw / top)
	}
	return out
}

// MinScore drops candidates scoring below min.
func MinScore(cs []Candidate, min float64) []Candidate {
	return slices.DeleteFunc(cs, func(c Candidate) bool { return c.Score < min })
}

func ageDays(ts int64, now time.Time) float64 {
	d := float64(now.UnixMilli()-ts) / float64(24*time.Hour/time.Millisecond)
	return math.Max(d, 0)
}

// Recency adds exp(-ageDays/halfLife)·weight; halfLife or weight 0 disables it.
func Recency(cs []Candidate, now time.Time, halfLifeDays, weight float64) []Candidate {
	if halfLifeDays <= 0 || weight <= 0 {
		return cs
	}
	for i := range cs {
		cs[i].Score = clamp01(cs[i].Score + math.Exp(-ageDays(cs[i].Memory.Timestamp, now)/halfLifeDays)*weight)
	}
	return cs
}

// Importance multiplies by 0.7 + 0.3·importance.
func Importance(cs []Candidate) []Candidate {
	for i := range cs {
		cs[i].Score = clamp01(cs[i].Score * (0.7 + 0.3*schemas.ClampImportance(cs[i].Memory.Importance)))
	}
	return cs
}

// LengthNorm multiplies by 1/(1 + 0.5·log2(max(len/anchor, 1))), len in
// characters; anchor 0 disables it.
func LengthNorm(cs []Candidate, anchor float64) []Candidate {
	if anchor <= 0 {
		return cs
	}
	for i := range cs {
		n := float64(len([]rune(cs[i].Memory.Text)))
		cs[i].Score = clamp01(cs[i].Score / (1 + 0.5*math.Log2(math.Max(n/anchor, 1))))
	}
	return cs
}

// TimeDecay multiplies by 0.5 + 0.5·exp(-ageDays/halfLife); halfLife 0 disables it.
func TimeDecay(cs []Candidate, now time.Time, halfLifeDays float64) []Candidate {
	if halfLifeDays <= 0 {
		return cs
	}
	for i := range cs {
		cs[i].Score = clamp01(cs[i].Score * (0.5 + 0.5*math.Exp(-ageDays(cs[i].Memory.Timestamp, now)/halfLifeDays)))
	}
	return cs
}

// NoiseFilter drops memories whose text is noise (denials, meta-questions,
// boilerplate, very short text).
func NoiseFilter(cs []Candidate) []Candidate {
	return slices.DeleteFunc(cs, func(c Candidate) bool { return rules.NoiseOf(c.Memory.Text) })
}

// MMRThreshold is the cosine above which a candidate counts as a
// near-duplicate of one already selected.
const MMRThreshold = 0.85

// MMR keeps order but defers (never drops) a candidate whose cosine to an
// already selected one exceeds 0.85, so near-duplicates go to the end.
func MMR(cs []Candidate) []Candidate { return MMRTop(cs, len(cs)) }

// MMRTop is MMR(cs)[:k] (all of it when shorter), found without comparing
// the candidates that come after the k-th one kept: a recall keeps five of
// some forty candidates, and their pairwise cosines were a sixteenth of its
// CPU.
func MMRTop(cs []Candidate, k int) []Candidate {
	selected := make([]Candidate, 0, min(k, len(cs)))
	var deferred []Candidate
	for _, c := range cs {
		if len(selected) >= k {
			return selected
		}
		dup := false
		for _, s := range selected {
			if len(c.Memory.Vector) > 0 && len(c.Memory.Vector) == len(s.Memory.Vector) &&
				vecindex.Cosine(c.Memory.Vector, s.Memory.Vector) > MMRThreshold {
				dup = true
				break
			}
		}
		if dup {
			deferred = append(deferred, c)
		} else {
			selected = append(selected, c)
		}
	}
	out := append(selected, deferred...)
	return out[:min(k, len(out))]
}

func sortByScore(cs []Candidate) {
	slices.SortStableFunc(cs, func(a, b Candidate) int { return cmp.Compare(b.Score, a.Score) })
}

func clamp01(x float64) float64 {
	if math.IsNaN(x) || x < 0 {
		return 0
	}
	return math.Min(x, 1)
}

// TemporalBoost multiplies by 1 + boost the candidates that answer a
// question about time: when the query asks when (temporal.Asks), memories
// that carry a date or a time expression; when the query names a date or
// a period ("in March", "last week", resolved against now), memories said
// in it or speaking of it. A memory's expressions are resolved against the
// moment it was said (its timestamp). boost 0 disables it.
func TemporalBoost(cs []Candidate, query string, now time.Time, boost float64) []Candidate {
	if boost <= 0 || len(cs) == 0 {
		return cs
	}
	asks := temporal.Asks(query)
	named := temporal.Find(query, now)
	if !asks && len(named) == 0 {
		return cs
	}
	for i := range cs {
		spans := memoryDates(cs[i].Memory)
		hit := asks && len(spans) > 0
		said := time.UnixMilli(cs[i].Memory.Timestamp).UTC()
		for _, q := range named {
			if !said.Before(q.From) && said.Before(q.To) {
				hit = true
			}
			for _, s := range spans {
				if s.Overlaps(q.From, q.To) {
					hit = true
				}
			}
		}
		if hit {
			cs[i].Score = clamp01(cs[i].Score * (1 + boost))
			cs[i].Sources.Temporal = true
		}
	}
	return cs
}

// memoryDates is what a memory says about time: the dates resolved when it
// was stored (metadata "dates"), or for a memory stored without them its
// text resolved against its timestamp.
func memoryDates(m schemas.Memory) []temporal.Span {
	ds, ok := temporal.StoredDates(m.Metadata)
	if !ok {
		return temporal.Find(m.Text, time.UnixMilli(m.Timestamp).UTC())
	}
	out := make([]temporal.Span, 0, len(ds))
	for _, d := range ds {
		if from, to, ok := d.Range(); ok {
			out = append(out, temporal.Span{Text: d.Text, From: from, To: to})
		}
	}
	return out
}

// outdatedWindow is how many of the first results are compared pairwise.
const outdatedWindow = 10

// modelLead: a change only the replace model reads trades places with an
// older memory that leads it by at most this. The model is sure of a pair
// of facts said in a sentence each, less of the turns a conversation
// stores whole: with no bound it cost the conversational evaluation set
// 0.011 of recall@10 for one more right answer of 72 on the dev
// scenarios.
const modelLead = 0.05

// Outdated ranks a newer memory that ends or replaces an older one's fact
// (rules.Statement.ReplacesBy: the rules read the change, or the replace
// model is sure of it) above it: the two trade scores — wherever in the
// first results each was when the rules read it, within modelLead when
// only the model did. A question matches the words a fact was first
// said in ("what phone do I use?" → "My phone is an Orbix 12") better
// than the words it changed in ("Finally upgraded — it's a Veltra S5
// now"), so how far behind the newer one came says nothing of which is
// current. The older one is not superseded — a change read from free
// words is a guess, and a guess must not hide a fact — but recall answers
// with the newer one first. cs must be sorted by score; the result is too.
func Outdated(cs []Candidate) []Candidate {
	n := min(len(cs), outdatedWindow)
	var gists [outdatedWindow]rules.Gist
	var said [outdatedWindow]*rules.Statement
	for i := range n {
		gists[i], said[i] = rules.ReadGist(cs[i].Memory.Text)
	}
	// Most texts tell no change: only the pairs their gists let through
	// are read in full.
	read := func(i int) *rules.Statement {
		if said[i] == nil {
			said[i] = rules.ReadStatement(cs[i].Memory.Text)
		}
		return said[i]
	}
	changed := false
	for j := range n {
		for i := range n {
			a, b := &cs[i], &cs[j]
			if i == j || a.Sources.Outdated != "" || b.Memory.Timestamp < a.Memory.Timestamp || !gists[j].MayReplace(gists[i]) {
				continue
			}
			by := rules.ReplacesByOf(b.Memory.Text, a.Memory.Text, func() string { return read(j).ReplacesBy(read(i)) })
			if by == "" || by == rules.ByModel && a.Score-b.Score > modelLead {
				continue
			}
			// The two trade places: both stay among the results (the
			// older one may be what a question about the past needs).
			if b.Score < a.Score {
				a.Score, b.Score = b.Score, a.Score
			}
			a.Sources.Outdated = b.Memory.ID
			changed = true
		}
	}
	if changed {
		sortByScore(cs)
	}
	return cs
}

// MatchScore is c's score without what the stages under cfg did only to
// order answers: the temporal lift (for "when" questions; it would let
// any dated memory through a gate) and Whose's lowering of another
// person's fact (it would keep out "My brother and I play chess" from
// "what could I do this weekend?"). The auto-recall gate weighs this.
func MatchScore(c Candidate, cfg Config) float64 {
	score := c.Score
	if c.Sources.Temporal {
		score /= 1 + cfg.TemporalBoost
	}
	if c.Sources.Relative && cfg.RelativeFactor > 0 {
		score /= cfg.RelativeFactor
	}
	return score
}

// Whose lowers, by factor, the memories that name a relative, a friend
// or a colleague ("My brother lives in Ashby", "Die Firma meiner Frau …")
// when the question asks about whoever asks it ("Where do I live now?",
// rules.AsksAboutSpeaker): such a memory shares the question's words
// ("live") and is another person's fact. It only lowers: "My wife and I
// moved to Kelvale" is the asker's fact too, and still answers when
// nothing else does.
func Whose(cs []Candidate, question string, factor float64) []Candidate {
	if factor >= 1 || len(cs) == 0 || !rules.AsksAboutSpeaker(question) {
		return cs
	}
	for i := range cs {
		if rules.Relation(cs[i].Memory.Text) != "" {
			cs[i].Score *= factor
			cs[i].Sources.Relative = true
		}
	}
	return cs
}
