package eval

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/schemas"
)

// idSpace makes a turn's memory id from its conversation and turn ids, so
// an evaluation store can be imported into again and results mapped back.
var idSpace = uuid.MustParse("6f1d3c1e-2b5a-4e8f-9a7c-3d2e1f0a9b8c")

// MemoryID is the id of a turn's memory.
func MemoryID(conv, turn string) string {
	return uuid.NewSHA1(idSpace, []byte(conv+"\x00"+turn)).String()
}

// AgentID is the agent a conversation's memories belong to: one agent per
// conversation, so conversations never see each other's turns.
func AgentID(conv string) string {
	id := "eval-" + conv
	if schemas.ValidateAgentID(id) == nil {
		return id
	}
	return "eval-" + uuid.NewSHA1(idSpace, []byte(conv)).String()[:8]
}

// Memories are the turns of c as memories: "speaker: text", dated at their
// session (a second apart, in order), in the conversation's agent scope.
func Memories(c *Conversation) []schemas.Memory {
	var out []schemas.Memory
	scope := "agent:" + AgentID(c.ID)
	for _, s := range c.Sessions {
		for i, t := range s.Turns {
			meta, _ := json.Marshal(map[string]string{"source": "eval", "conversation": c.ID, "session": s.ID, "turn": t.ID,
				"sessionDate": s.When.Format(time.RFC3339)})
			out = append(out, schemas.Memory{
				ID: MemoryID(c.ID, t.ID), Text: turnText(t), Category: schemas.CategoryFact, Scope: scope, Importance: 0.7,
				Timestamp: s.When.Add(time.Duration(i) * time.Second).UnixMilli(), Metadata: meta,
			})
		}
	}
	return out
}

// turnText is a turn's memory text: "speaker: text".
func turnText(t Turn) string {
	if t.Speaker == "" {
		return t.Text
	}
	return t.Speaker + ": " + t.Text
}

// Import writes every conversation's turns into the engine's store (ids
// kept, no duplicate check: every turn is a memory). progress, if set, is
// called with the rows written and the total.
func Import(ctx context.Context, eng *memory.Engine, convs []*Conversation, progress func(done, total int)) (int, error) {
	var all []schemas.Memory
	for _, c := range convs {
		all = append(all, Memories(c)...)
	}
	im := portable.NewImporter(eng.Backend(), eng.Embedder(), portable.ImportOptions{})
	const batch = 256
	written := 0
	for start := 0; start < len(all); start += batch {
		end := min(start+batch, len(all))
		recs := make([]portable.Record, 0, end-start)
		for _, m := range all[start:end] {
			recs = append(recs, portable.Record{Memory: m})
		}
		res, err := im.Import(ctx, recs)
		if err != nil {
			return written, err
		}
		for _, r := range res {
			if r.Status == portable.Failed {
				return written, fmt.Errorf("import turn %s: %s", r.ID, r.Reason)
			}
			written++
		}
		if progress != nil {
			progress(end, len(all))
		}
	}
	return written, nil
}

// Options tune a run.
type Options struct {
	// Limit is how many memories a question recalls (the largest k);
	// default 10.
	Limit int
	// ContextTimeout bounds each auto-recall; default 5 s (an evaluation
	// measures what is recalled, not the agent's deadline).
	ContextTimeout time.Duration
	// ExplainMisses keeps the N questions recalled worst, with the score
	// sources of what was recalled.
	ExplainMisses int
	// Progress, if set, is called with the questions asked and the total.
	Progress func(done, total int)
}

// Ks are the cut-offs recall is reported at.
var Ks = []int{1, 5, 10}

// Figures are recall@k, MRR and counts over a set of questions.
type Figures struct {
	Questions int                `json:"questions"`
	Recall    map[string]float64 `json:"recall"` // "@1", "@5", "@10": mean fraction of evidence turns in the top k
	Hit       map[string]float64 `json:"hit"`    // fraction of questions with any evidence in the top k
	MRR       float64            `json:"mrr"`
}

// ContextFigures measure auto-recall (the <relevant-memories> block).
type ContextFigures struct {
	// Injected memories over all questions with evidence, and the share
	// of them that are evidence or a turn next to evidence.
	Injected  int     `json:"injected"`
	Precision float64 `json:"precision"`
	// Questions with evidence whose block carried at least one evidence
	// turn.
	EvidenceShown float64 `json:"evidenceShown"`
	// Questions of category none, and the share whose block recalled
	// nothing (core facts, which come whatever the question, aside).
	NoneQuestions int     `json:"noneQuestions"`
	NoneEmpty     float64 `json:"noneEmpty"`
}

// Report is a run's outcome.
type Report struct {
	Conversations int                `json:"conversations"`
	Memories      int                `json:"memories"`
	Overall       Figures            `json:"overall"`
	ByCategory    map[string]Figures `json:"byCategory"`
	Context       ContextFigures     `json:"context"`
	// Calibration sweeps auto-recall's gate (threshold and margin): what
	// the block would have held at each setting.
	Calibration []CalPoint `json:"calibration"`
	LatencyP50  float64    `json:"latencyP50Ms"`
	LatencyP99  float64    `json:"latencyP99Ms"`
	Misses      []Miss     `json:"misses,omitempty"`
}

// CalPoint is the auto-recall block at one threshold.
type CalPoint struct {
	Threshold     float64 `json:"threshold"`
	Margin        float64 `json:"margin"`
	Injected      int     `json:"injected"`
	Precision     float64 `json:"precision"`
	EvidenceShown float64 `json:"evidenceShown"`
	NoneEmpty     float64 `json:"noneEmpty"`
}

// Miss is a question recalled badly, with what was recalled instead.
type Miss struct {
	Conversation string   `json:"conversation"`
	Question     Question `json:"question"`
	Recall       float64  `json:"recall"` // at the largest k
	Evidence     []Shown  `json:"evidence"`
	Recalled     []Shown  `json:"recalled"`
}

// Shown is one memory in a miss report.
type Shown struct {
	Turn    string            `json:"turn"`
	Text    string            `json:"text"`
	Rank    int               `json:"rank,omitempty"` // 1-based rank among the recalled; 0: not recalled
	Sources *retrieve.Sources `json:"sources,omitempty"`
}

type outcome struct {
	conv     *Conversation
	q        Question
	ranks    []int // per evidence turn: 1-based rank, 0 when not recalled
	recalled []retrieve.Candidate
	turns    []string // the recalled memories' turn ids
	direct   []string // turn ids of a direct recall (no neighbours), as auto-recall ranks
	dscores  []float64
	idx      map[string]TurnRef
}

// Run asks every question of convs (already imported) and measures the
// answers.
func Run(ctx context.Context, eng *memory.Engine, convs []*Conversation, o Options) (Report, error) {
	if o.Limit <= 0 {
		o.Limit = 10
	}
	if o.ContextTimeout <= 0 {
		o.ContextTimeout = 5 * time.Second
	}
	rep := Report{Conversations: len(convs), ByCategory: map[string]Figures{}}
	total := 0
	for _, c := range convs {
		total += len(c.Questions)
		for _, s := range c.Sessions {
			rep.Memories += len(s.Turns)
		}
	}
	var outs []outcome
	var lat []float64
	var ctxInjected, ctxGood, ctxShown, ctxWithEvidence, noneQ, noneEmpty int
	done := 0
	for _, c := range convs {
		who := memory.Agent(AgentID(c.ID))
		turnOf := turnsByMemory(c)
		idx := c.Index()
		for _, q := range c.Questions {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			t0 := time.Now()
			res, err := eng.Recall(ctx, who, q.Text, memory.RecallOptions{Limit: o.Limit})
			lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
			if err != nil {
				return rep, fmt.Errorf("question %s: %w", q.ID, err)
			}
			out := outcome{conv: c, q: q, recalled: res.Candidates, idx: idx}
			rank := make(map[string]int)
			for i, cand := range res.Candidates {
				out.turns = append(out.turns, turnOf[cand.Memory.ID])
				if t, ok := turnOf[cand.Memory.ID]; ok {
					if _, seen := rank[t]; !seen {
						rank[t] = i + 1
					}
				}
			}
			for _, ev := range q.Evidence {
				out.ranks = append(out.ranks, rank[ev])
			}
			dres, err := eng.Recall(ctx, who, q.Text, memory.RecallOptions{Limit: o.Limit, Direct: true})
			if err != nil {
				return rep, fmt.Errorf("question %s: %w", q.ID, err)
			}
			for _, cand := range dres.Candidates {
				out.direct = append(out.direct, turnOf[cand.Memory.ID])
				out.dscores = append(out.dscores, cand.Score)
			}
			outs = append(outs, out)

			cr, err := eng.Context(ctx, who, q.Text, memory.ContextOptions{Timeout: o.ContextTimeout})
			if err != nil {
				return rep, fmt.Errorf("question %s: auto-recall: %w", q.ID, err)
			}
			if q.Category == None {
				noneQ++
				if len(cr.Memories) == 0 { // core facts come whatever the question
					noneEmpty++
				}
			} else {
				ctxWithEvidence++
				shown := slices.ContainsFunc(cr.Core, func(m schemas.Memory) bool { return slices.Contains(q.Evidence, turnOf[m.ID]) })
				for _, m := range cr.Memories {
					ctxInjected++
					t := turnOf[m.Memory.ID]
					if slices.Contains(q.Evidence, t) {
						shown = true
					}
					if nearEvidence(idx, t, q.Evidence) {
						ctxGood++
					}
				}
				if shown {
					ctxShown++
				}
			}
			done++
			if o.Progress != nil {
				o.Progress(done, total)
			}
		}
	}
	rep.Overall = figures(outs, func(outcome) bool { return true })
	for _, cat := range Categories {
		if cat == None {
			continue
		}
		if f := figures(outs, func(x outcome) bool { return x.q.Category == cat }); f.Questions > 0 {
			rep.ByCategory[cat] = f
		}
	}
	rep.Context = ContextFigures{Injected: ctxInjected, NoneQuestions: noneQ}
	if ctxInjected > 0 {
		rep.Context.Precision = float64(ctxGood) / float64(ctxInjected)
	}
	if ctxWithEvidence > 0 {
		rep.Context.EvidenceShown = float64(ctxShown) / float64(ctxWithEvidence)
	}
	if noneQ > 0 {
		rep.Context.NoneEmpty = float64(noneEmpty) / float64(noneQ)
	}
	rep.LatencyP50, rep.LatencyP99 = percentile(lat, 0.5), percentile(lat, 0.99)
	rep.Calibration = calibrate(outs)
	if o.ExplainMisses > 0 {
		rep.Misses = misses(outs, o.ExplainMisses, o.Limit)
	}
	return rep, nil
}

// nearEvidence reports whether turn t is evidence or next to an evidence
// turn in the same session.
func nearEvidence(idx map[string]TurnRef, t string, evidence []string) bool {
	at, ok := idx[t]
	if !ok {
		return false
	}
	for _, ev := range evidence {
		e := idx[ev]
		if e.Session == at.Session && at.Turn >= e.Turn-1 && at.Turn <= e.Turn+1 {
			return true
		}
	}
	return false
}

// figures computes recall, hit rate and MRR over the questions keep
// selects that have evidence.
func figures(outs []outcome, keep func(outcome) bool) Figures {
	f := Figures{Recall: map[string]float64{}, Hit: map[string]float64{}}
	for _, x := range outs {
		if !keep(x) || len(x.ranks) == 0 {
			continue
		}
		f.Questions++
		first := 0
		for _, r := range x.ranks {
			if r > 0 && (first == 0 || r < first) {
				first = r
			}
		}
		if first > 0 {
			f.MRR += 1 / float64(first)
		}
		for _, k := range Ks {
			key := fmt.Sprintf("@%d", k)
			in := 0
			for _, r := range x.ranks {
				if r > 0 && r <= k {
					in++
				}
			}
			f.Recall[key] += float64(in) / float64(len(x.ranks))
			if first > 0 && first <= k {
				f.Hit[key]++
			}
		}
	}
	if f.Questions > 0 {
		n := float64(f.Questions)
		f.MRR /= n
		for k := range f.Recall {
			f.Recall[k] /= n
			f.Hit[k] /= n
		}
	}
	return f
}

// misses returns the n questions recalled worst (lowest recall at the
// largest k, then lowest MRR), with their evidence and what came instead.
func misses(outs []outcome, n, limit int) []Miss {
	type scored struct {
		x      outcome
		recall float64
		rr     float64
	}
	var ss []scored
	for _, x := range outs {
		if len(x.ranks) == 0 {
			continue
		}
		in, first := 0, 0
		for _, r := range x.ranks {
			if r > 0 {
				in++
				if first == 0 || r < first {
					first = r
				}
			}
		}
		s := scored{x: x, recall: float64(in) / float64(len(x.ranks))}
		if first > 0 {
			s.rr = 1 / float64(first)
		}
		if s.recall < 1 {
			ss = append(ss, s)
		}
	}
	slices.SortStableFunc(ss, func(a, b scored) int {
		if c := cmp.Compare(a.recall, b.recall); c != 0 {
			return c
		}
		return cmp.Compare(a.rr, b.rr)
	})
	var out []Miss
	for _, s := range ss[:min(n, len(ss))] {
		c, idx := s.x.conv, s.x.idx
		m := Miss{Conversation: c.ID, Question: s.x.q, Recall: s.recall}
		for i, ev := range s.x.q.Evidence {
			ref := idx[ev]
			t := c.Sessions[ref.Session].Turns[ref.Turn]
			sh := Shown{Turn: ev, Text: turnText(t), Rank: s.x.ranks[i]}
			if r := s.x.ranks[i]; r > 0 {
				src := s.x.recalled[r-1].Sources
				sh.Sources = &src
			}
			m.Evidence = append(m.Evidence, sh)
		}
		for i, cand := range s.x.recalled[:min(5, len(s.x.recalled))] {
			src := cand.Sources
			m.Recalled = append(m.Recalled, Shown{Turn: s.x.turns[i], Text: cand.Memory.Text, Rank: i + 1, Sources: &src})
		}
		out = append(out, m)
	}
	return out
}

func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// calibrate sweeps auto-recall's gate (memory.AutoRecallPick): score
// thresholds from 0.30 to 0.95 and margins over the pool's median, over
// each question's direct matches as auto-recall ranks them.
func calibrate(outs []outcome) []CalPoint {
	var pts []CalPoint
	for _, m := range []float64{0, 0.1, 0.15, 0.18, 0.2, 0.25} {
		for t := 0.30; t < 0.951; t += 0.025 {
			p := CalPoint{Threshold: math.Round(t*1000) / 1000, Margin: m}
			good, withEv, shown, none, empty := 0, 0, 0, 0, 0
			for _, x := range outs {
				var block []string
				for _, i := range memory.AutoRecallPick(x.dscores, t, m) {
					block = append(block, x.direct[i])
				}
				if x.q.Category == None {
					none++
					if len(block) == 0 {
						empty++
					}
					continue
				}
				withEv++
				hit := false
				for _, turn := range block {
					p.Injected++
					if nearEvidence(x.idx, turn, x.q.Evidence) {
						good++
					}
					if slices.Contains(x.q.Evidence, turn) {
						hit = true
					}
				}
				if hit {
					shown++
				}
			}
			if p.Injected > 0 {
				p.Precision = float64(good) / float64(p.Injected)
			}
			if withEv > 0 {
				p.EvidenceShown = float64(shown) / float64(withEv)
			}
			if none > 0 {
				p.NoneEmpty = float64(empty) / float64(none)
			}
			pts = append(pts, p)
		}
	}
	return pts
}

// turnsByMemory maps a conversation's memory ids to its turn ids.
func turnsByMemory(c *Conversation) map[string]string {
	out := make(map[string]string)
	for _, s := range c.Sessions {
		for _, t := range s.Turns {
			out[MemoryID(c.ID, t.ID)] = t.ID
		}
	}
	return out
}
