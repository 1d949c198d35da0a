package distill

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clawmem/clawmem/engine/rules"
)

// DefaultSummaryMessages is how many trailing messages SessionSummary keeps
// by default (the seed's sessionMemory.messageCount).
const DefaultSummaryMessages = 15

// summaryLineChars bounds each message's share of a summary, so fifteen
// messages stay a memory-sized text rather than a transcript.
const summaryLineChars = 300

// SessionSummary is the seed's "Session Memory (command:new)": the last lastN
// messages (default 15) as a compact text fit to store as one fact. Each
// message becomes one line "User: …" or "Assistant: …", whitespace collapsed
// and cut to 300 characters; noise (greetings, HEARTBEAT) is left out. The
// seed stores it with category fact, scope global and importance 0.5.
func SessionSummary(msgs []Message, lastN int) string {
	if lastN <= 0 {
		lastN = DefaultSummaryMessages
	}
	var lines []string
	var last int64
	for i := len(msgs) - 1; i >= 0 && len(lines) < lastN; i-- {
		m := msgs[i]
		text := strings.Join(strings.Fields(m.Text), " ")
		if rules.IsNoise(text) {
			continue
		}
		if utf8.RuneCountInString(text) > summaryLineChars {
			text = cutRunes(text, summaryLineChars-1) + "…"
		}
		lines = append(lines, speaker(m.Role)+": "+text)
		last = max(last, m.Timestamp)
	}
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Session summary")
	if last > 0 {
		b.WriteString(" (" + time.UnixMilli(last).UTC().Format("2006-01-02") + ")")
	}
	fmt.Fprintf(&b, ", last %d of %d messages:", len(lines), len(msgs))
	for i := len(lines) - 1; i >= 0; i-- {
		b.WriteString("\n" + lines[i])
	}
	return b.String()
}

func speaker(role string) string {
	if role == RoleUser {
		return "User"
	}
	return "Assistant"
}
