package query

// Formatting of tool results: the text an agent reads.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/schemas"
)

// sourceSuffix names where a hit came from, as the plugin's recall
// output does: ", vector+BM25+reranked".
func sourceSuffix(src retrieve.Sources) string {
	var parts []string
	if src.VectorHit {
		parts = append(parts, "vector")
	}
	if src.BM25Hit {
		parts = append(parts, "BM25")
	}
	if src.Rerank == retrieve.RerankCrossEncoder {
		parts = append(parts, "reranked")
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, "+")
}

// memoryViews are the candidates as a reply's details show them, their
// scores to retrieve.ScorePlaces decimals.
func memoryViews(cs []retrieve.Candidate) []schemas.MemoryView {
	views := make([]schemas.MemoryView, len(cs))
	for i, c := range cs {
		views[i] = schemas.View(c.Memory)
		views[i].Score = retrieve.RoundScore(c.Score)
		views[i].Sources = c.Sources.Rounded()
	}
	return views
}

func orDefault(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func writeCounts(b *strings.Builder, title string, counts map[string]int) {
	if len(counts) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s:", title)
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "\n  %s: %d", k, counts[k])
	}
}

// shortID is the 8-char id prefix the tools show and accept back.
func shortID(id string) string {
	if len(id) > schemas.MinPrefixLen {
		return id[:schemas.MinPrefixLen]
	}
	return id
}

// label is a memory's "[category:scope]", escaped as memory text is:
// legacy rows may carry anything in either.
func label(c schemas.Category, scope string) string {
	return "[" + rules.EscapeMemoryText(string(c), 0) + ":" + rules.EscapeMemoryText(scope, 0) + "]"
}

// snippet is a one-line, escaped quote of at most snippetRunes runes, for
// replies that echo the text a caller just sent.
func snippet(s string) string { return rules.EscapeMemoryText(s, snippetRunes) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// life marks a memory that no longer holds, for lists and recall
// with history: "; superseded by 3f2a9c1e on 2026-03-01" or "; archived
// on …". Empty for a current memory.
func life(v schemas.MemoryView) string {
	if v.InvalidatedAt == 0 {
		return ""
	}
	on := time.UnixMilli(v.InvalidatedAt).UTC().Format(time.DateOnly)
	if v.SupersededBy == "" {
		return "; archived on " + on
	}
	return "; superseded by " + shortID(v.SupersededBy) + " on " + on
}
