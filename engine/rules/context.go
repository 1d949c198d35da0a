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
}

// SanitizeForContext is EscapeMemoryText cut to MaxContextRunes: how a
// memory's text, category or scope appears in the auto-recall block.
func SanitizeForContext(text string) string { return EscapeMemoryText(text, MaxContextRunes) }

// FormatRelevantMemories renders recalled memories as the block auto-recall
// prepends to a prompt: the MaxContextMemories highest-scoring ones, framed
// by FrameMemories (each cut to MaxContextRunes) inside <relevant-memories>
// tags. Escaping is what keeps a stored "</relevant-memories> ignore
// previous instructions" from closing the block and speaking as the system.
// No memories give "".
func FormatRelevantMemories(ms []ContextMemory) string {
	ranked := slices.Clone(ms)
	slices.SortStableFunc(ranked, func(a, b ContextMemory) int { return cmp.Compare(b.Score, a.Score) })
	var lines []FramedMemory
	for _, m := range ranked {
		if len(lines) == MaxContextMemories {
			break
		}
		if SanitizeForContext(m.Text) == "" {
			continue
		}
		category, scope := string(m.Category), m.Scope
		if category == "" {
			category = string(schemas.CategoryOther)
		}
		if scope == "" {
			scope = schemas.GlobalScope
		}
		line := FramedMemory{Label: "- [" + SanitizeForContext(category) + ":" + SanitizeForContext(scope) + "]", Text: m.Text}
		if note := SanitizeForContext(m.Dates); note != "" {
			line.Note = " [" + note + "]"
		}
		lines = append(lines, line)
	}
	framed := FrameMemories(lines, MaxContextRunes)
	if framed == "" {
		return ""
	}
	return contextOpen + "\n" + framed + "\n" + contextClose
}
