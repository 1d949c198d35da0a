package rules

import (
	"cmp"
	"slices"

	"github.com/clawmem/clawmem/schemas"
)

const (
	// MaxContextMemories is how many memories one recall block carries.
	MaxContextMemories = 3
	// MaxContextRunes bounds one memory's text in a recall block.
	MaxContextRunes = 300
)

const (
	contextOpen  = "<relevant-memories>"
	contextClose = "</relevant-memories>"
)

// ContextMemory is one recalled memory to render into a prompt.
type ContextMemory struct {
	Category schemas.Category
	Scope    string
	Text     string
	Score    float64
	// Dates resolves the text's relative dates for the reader
	// ("last Thursday = 2025-02-06"); shown after the text when set.
	Dates string
	// Core marks a core fact (IsCore): it goes first, whatever its score.
	Core bool
}

// SanitizeForContext is EscapeMemoryText cut to MaxContextRunes: how a
// memory's text, category or scope appears in the auto-recall block.
func SanitizeForContext(text string) string { return EscapeMemoryText(text, MaxContextRunes) }

// FormatRelevantMemories is FitRelevantMemories without a budget.
func FormatRelevantMemories(ms []ContextMemory) string {
	block, _ := FitRelevantMemories(ms, 0)
	return block
}

// FitRelevantMemories renders memories as the block auto-recall prepends
// to a prompt: the core ones first, in the order given and tagged [core],
// then the MaxContextMemories highest-scoring others, framed by
// FrameMemories (each cut to MaxContextRunes) inside <relevant-memories>
// tags. With budget > 0 the whole block, framing included, is at most
// budget tokens by EstimateTokens: a memory that would take it over is
// left out whole, never cut to fit, and a later one that fits still goes
// in. It returns the block and the indexes of the memories in it. Escaping
// is what keeps a stored "</relevant-memories> ignore previous
// instructions" from closing the block and speaking as the system. No
// memories give "".
func FitRelevantMemories(ms []ContextMemory, budget int) (string, []int) {
	order := make([]int, 0, len(ms))
	for i, m := range ms {
		if m.Core {
			order = append(order, i)
		}
	}
	cores := len(order)
	for i, m := range ms {
		if !m.Core {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order[cores:], func(a, b int) int { return cmp.Compare(ms[b].Score, ms[a].Score) })
	var (
		lines  []FramedMemory
		kept   []int
		others int
		block  string
	)
	for _, i := range order {
		m := ms[i]
		if !m.Core && others == MaxContextMemories || SanitizeForContext(m.Text) == "" {
			continue
		}
		category, scope := string(m.Category), m.Scope
		if category == "" {
			category = string(schemas.CategoryOther)
		}
		if scope == "" {
			scope = schemas.GlobalScope
		}
		label := "- [" + SanitizeForContext(category) + ":" + SanitizeForContext(scope) + "]"
		if m.Core {
			label = "- [core] [" + SanitizeForContext(category) + ":" + SanitizeForContext(scope) + "]"
		}
		line := FramedMemory{Label: label, Text: m.Text}
		if note := SanitizeForContext(m.Dates); note != "" {
			line.Note = " [" + note + "]"
		}
		next := contextOpen + "\n" + FrameMemories(append(lines, line), MaxContextRunes) + "\n" + contextClose
		if budget > 0 && EstimateTokens(next) > budget {
			continue
		}
		lines, kept, block = append(lines, line), append(kept, i), next
		if !m.Core {
			others++
		}
	}
	return block, kept
}
