package distill

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/engine/vecindex"
)

// Score weights: importance leads, corroboration (several quotes) and
// specificity (names, numbers, commands) break ties between equally
// important lessons.
const (
	weightImportance  = 0.6
	weightEvidence    = 0.25
	weightSpecificity = 0.15
	fullEvidence      = 3   // quotes at which corroboration counts fully
	fullLengthRunes   = 200 // length at which a lesson counts as fully detailed
	fullSpecific      = 4   // specific tokens, and keywords, that count fully
)

// Score ranks a lesson for the final cut:
// 0.6·importance + 0.25·min(quotes/3,1) + 0.15·specificity, where
// specificity = 0.4·min(runes/200,1) + 0.4·min(specificTokens/4,1) + 0.2·min(keywords/4,1).
func Score(l Lesson) float64 {
	evidence := ratio(len(l.Evidence), fullEvidence)
	return weightImportance*l.Importance + weightEvidence*evidence + weightSpecificity*specificity(l)
}

func specificity(l Lesson) float64 {
	length := ratio(utf8.RuneCountInString(l.Text), fullLengthRunes)
	tokens := ratio(specificTokens(l.Text), fullSpecific)
	keywords := ratio(len(l.Keywords)+len(l.KeywordsZh), fullSpecific)
	return 0.4*length + 0.4*tokens + 0.2*keywords
}

func ratio(n, full int) float64 { return min(float64(n)/float64(full), 1) }

// reduceStats counts what the reduce step removed.
type reduceStats struct {
	filtered int    // no evidence, generic advice, a secret, an injection
	merged   int    // folded into a duplicate
	warning  string // a step skipped, e.g. the embedder failed
}

// reducer de-duplicates, filters, scores and cuts a session's candidates.
type reducer struct {
	emb        embed.Embedder
	similarity float64
	maxFinal   int
	secrets    redact.Mode
}

// reduce returns the best lessons, at most maxFinal, best first. Candidates
// must come in session order: ties keep it, so runs are reproducible.
func (r reducer) reduce(ctx context.Context, lessons []Lesson) ([]Lesson, reduceStats) {
	var st reduceStats
	lessons, st.filtered = filterLessons(lessons, r.secrets)
	lessons, st.merged = dedupExact(lessons)
	lessons, merged, err := r.dedupSimilar(ctx, lessons)
	st.merged += merged
	if err != nil {
		st.warning = fmt.Sprintf("embedding de-duplication skipped: %v", err)
	}
	return rankAndCut(lessons, r.maxFinal), st
}

// filterLessons drops lessons without evidence, generic advice, lessons
// carrying a secret, and lessons that read as instructions to an agent:
// recall replays lessons into prompts.
// In refuse mode a lesson quoting a redacted secret is dropped too.
func filterLessons(lessons []Lesson, secrets redact.Mode) ([]Lesson, int) {
	out := make([]Lesson, 0, len(lessons))
	for _, l := range lessons {
		if len(l.Evidence) == 0 || IsGenericAdvice(l.Text) || holdsSecret(l.Text) || evidenceHasSecret(l) || rules.IsInjection(l.Text) ||
			(secrets == redact.ModeRefuse && strings.Contains(l.Text, redact.MarkerPrefix)) {
			continue
		}
		out = append(out, l)
	}
	return out, len(lessons) - len(out)
}

// holdsSecret: a lesson replayed into prompts must not carry a
// credential, whatever secrets.mode says about the transcript.
func holdsSecret(text string) bool { return len(redact.Find(text)) > 0 }

func evidenceHasSecret(l Lesson) bool {
	for _, e := range l.Evidence {
		if holdsSecret(e.Quote) {
			return true
		}
	}
	return false
}

// dedupExact folds lessons whose normalised text is equal into the first.
func dedupExact(lessons []Lesson) ([]Lesson, int) {
	first := make(map[string]int, len(lessons))
	out := make([]Lesson, 0, len(lessons))
	for _, l := range lessons {
		key := normalizeText(l.Text)
		if i, ok := first[key]; ok {
			out[i] = merge(out[i], l)
			continue
		}
		first[key] = len(out)
		out = append(out, l)
	}
	return out, len(lessons) - len(out)
}

// dedupSimilar folds each lesson into a better-scored one whose embedding is
// at least r.similarity cosine-similar. Without an embedder, or when it
// fails, the lessons come back unchanged.
func (r reducer) dedupSimilar(ctx context.Context, lessons []Lesson) ([]Lesson, int, error) {
	if r.emb == nil || len(lessons) < 2 {
		return lessons, 0, nil
	}
	texts := make([]string, len(lessons))
	for i, l := range lessons {
		texts[i] = l.Text
	}
	vecs, err := r.emb.EmbedPassages(ctx, texts)
	if err != nil {
		return lessons, 0, err
	}
	if len(vecs) != len(lessons) {
		return lessons, 0, fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), len(lessons))
	}
	order := rankOrder(lessons)
	var reps []int // indexes of kept lessons, best first
	into := make([]int, len(lessons))
	for _, i := range order {
		into[i] = i
		for _, rep := range reps {
			if float64(vecindex.Cosine(vecs[i], vecs[rep])) >= r.similarity {
				into[i] = rep
				break
			}
		}
		if into[i] == i {
			reps = append(reps, i)
		}
	}
	return applyMerges(lessons, into), len(lessons) - len(reps), nil
}

// applyMerges folds lesson i into lesson into[i], keeping session order.
func applyMerges(lessons []Lesson, into []int) []Lesson {
	merged := slices.Clone(lessons)
	for i, target := range into {
		if target != i {
			merged[target] = merge(merged[target], lessons[i])
		}
	}
	out := make([]Lesson, 0, len(lessons))
	for i, target := range into {
		if target == i {
			out = append(out, merged[i])
		}
	}
	return out
}

// rankOrder lists indexes best score first; ties keep session order.
func rankOrder(lessons []Lesson) []int {
	scores := make([]float64, len(lessons))
	order := make([]int, len(lessons))
	for i, l := range lessons {
		scores[i], order[i] = Score(l), i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	return order
}

// rankAndCut sorts lessons best first and keeps at most n.
func rankAndCut(lessons []Lesson, n int) []Lesson {
	order := rankOrder(lessons)
	out := make([]Lesson, 0, min(n, len(order)))
	for _, i := range order[:min(n, len(order))] {
		out = append(out, lessons[i])
	}
	return out
}

// merge folds b into a: a's wording and category stay, the importance is the
// higher one, evidence and keywords are united.
func merge(a, b Lesson) Lesson {
	a.Importance = max(a.Importance, b.Importance)
	a.Evidence = mergeEvidence(a.Evidence, b.Evidence)
	a.Tags = cleanList(append(slices.Clip(a.Tags), b.Tags...))
	a.Keywords = cleanList(append(slices.Clip(a.Keywords), b.Keywords...))
	a.KeywordsZh = cleanList(append(slices.Clip(a.KeywordsZh), b.KeywordsZh...))
	return a
}

func mergeEvidence(a, b []Evidence) []Evidence {
	out := slices.Clip(a)
	for _, e := range b {
		if len(out) >= maxEvidence {
			break
		}
		if !hasEvidence(out, normalizeQuote(e.Quote)) {
			out = append(out, e)
		}
	}
	return out
}
