package rules

import (
	"strings"
	"unicode/utf8"
)

const (
	// Shorter queries that are not questions rarely carry enough meaning
	// for a lookup; CJK needs fewer characters for the same meaning.
	minQueryRunes    = 15
	minQueryRunesCJK = 6
	// maxShellWords: "git status" is a command, a sentence that starts with
	// "test" is a request.
	maxShellWords = 6
)

// ShouldSkipRetrieval reports whether a prompt is not worth a memory lookup:
// greetings, slash and shell commands, acknowledgements, continuations, pure
// emoji, heartbeats, "[System" lines and short statements. A prompt that
// refers to memory, the past or the user's own details is always looked up,
// except heartbeats and system lines, which no user typed.
func ShouldSkipRetrieval(query string) bool {
	q := StripEnvelope(Normalize(query))
	if q == "" || strings.Contains(q, "HEARTBEAT") || strings.HasPrefix(q, "[System") {
		return true
	}
	t := prepare(q)
	if t.has(ruleRecall) {
		return false
	}
	if len(t.words) == 0 && !t.cjk { // only emoji, symbols or punctuation
		return true
	}
	if len(q) <= maxWholeMessageBytes {
		if bare := bareForm(q); greetingSet[bare] || acknowledgeSet[bare] || continuationSet[bare] {
			return true
		}
	}
	if isSlashCommand(q) || t.has(ruleShell) && isShortCommand(q, &t) {
		return true
	}
	if isQuestion(q) {
		return false
	}
	n := utf8.RuneCountInString(q)
	return t.cjk && n < minQueryRunesCJK || !t.cjk && n < minQueryRunes
}

// isSlashCommand accepts "/new" and "/model gpt-5" but not a path such as
// "/etc/hosts is broken".
func isSlashCommand(q string) bool {
	if !strings.HasPrefix(q, "/") {
		return false
	}
	first, _, _ := strings.Cut(q, " ")
	return len(first) > 1 && !strings.Contains(first[1:], "/")
}

func isShortCommand(q string, t *text) bool {
	return !strings.ContainsRune(q, '\n') && !isQuestion(q) && len(t.words) <= maxShellWords
}

func isQuestion(q string) bool {
	q = strings.TrimRight(q, " \t\r\n.!。！")
	return strings.ContainsAny(q, "?？") || strings.HasSuffix(q, "吗") || strings.HasSuffix(q, "呢")
}
