package rules

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// IsInjection reports text that tries to steer the agent rather than tell it
// about the user: overriding its instructions, re-assigning its role,
// revealing its prompt, forging a turn, a role header or clawmem's own
// framing, or telling it to run a tool. Such text is neither captured nor
// stored, since a memory is replayed into later prompts.
//
// The checks read the normalised text (Normalize) and look for kinds of
// words near each other rather than for fixed sentences: a verb that sets
// instructions aside (ignore, vergiss, olvida, 忽略 …) within a few words of
// what it sets aside (instructions, Regeln, consignes, 指令 …) qualified as
// the agent's own (previous, all, your, system …); see injectionwords.go.
// The most precise of these refuse a text outright (sureSignals); for the
// rest, a model trained on testdata/injection/train.tsv weighs the rules'
// signals with the text's words and character n-grams (injectionmodel.go).
func IsInjection(text string) bool {
	s := Normalize(text)
	// s is normalised already: splitText spares prepare's second pass.
	t := splitText(s, make([]span, 0, wordsOnStack))
	return injects(s, &t)
}

// injects is IsInjection on text already normalised into s and prepared
// into t: a sure rule signal refuses the text, and otherwise the learned
// model's score does (injectionmodel.go).
func injects(s string, t *text) bool {
	f := *t
	if folded, ok := foldText(t); ok {
		f = folded
	}
	sig := injSignals(s, t, &f)
	return sig&sureSignals != 0 || injectionScore(&f, sig) >= injectionModel.heads[0].threshold
}

// roleTags are the tag names that mark a turn or a tool exchange in chat
// templates and in clawmem's own recall block.
var roleTags = []string{
	"system", "assistant", "user", "developer", "tool", "tool_call", "tool_result", "tool_use",
	"function_call", "function", "relevant-memories", "sys", "inst", "im_start", "im_end",
	"start_of_turn", "end_of_turn", "system-reminder",
}

// maxTagBytes bounds how far a tag's closing ">" is looked for, keeping the
// scan linear in the text.
const maxTagBytes = 200

// hasRoleTag finds <system>, </assistant>, <tool name="x"> and the like, and
// chat-template markers such as <|im_start|>; lower must be lower-cased.
func hasRoleTag(lower string) bool {
	for i := 0; ; {
		j := strings.IndexByte(lower[i:], '<')
		if j < 0 {
			return false
		}
		i += j + 1
		rest := strings.TrimLeft(strings.TrimPrefix(lower[i:], "/"), " ")
		if after, ok := strings.CutPrefix(rest, "|"); ok {
			if k := strings.Index(after[:min(len(after), maxTagBytes)], "|>"); k > 0 && tagName(after[:k]) == after[:k] {
				return true
			}
			continue
		}
		name := tagName(rest)
		if !oneOf(name, roleTags) {
			continue
		}
		end := rest[len(name):]
		if end == "" || !strings.ContainsRune(">/ \t\n", rune(end[0])) {
			continue
		}
		if strings.Contains(end[:min(len(end), maxTagBytes)], ">") {
			return true
		}
	}
}

// roleNames head a forged turn in brackets or as a markdown heading:
// "[system]", "(SYSTEM NOTE)", "【系统】", "### Assistant".
var roleNames = append([]string{"assistant", "inst", "/inst"}, headerNames...)

// headerNames head a forged instruction before a colon at the start of a
// line: "SYSTEM: …", "Developer: you …". "Assistant:" and "User:" are not
// among them: clawmem's own session summaries are written that way.
var headerNames = []string{
	"system", "sys", "developer", "admin", "administrator", "operator", "override",
	"system message", "system note", "system notice", "system prompt", "system override", "admin override",
	"developer message", "developer note", "operator note", "system instruction", "system instructions",
	"système", "systeme", "systém", "sistema", "系统", "系統", "系统消息", "系统提示", "システム", "시스템",
}

// maxHeaderName bounds the role word of a header, in bytes.
const maxHeaderName = 24

// hasRoleHeader finds a forged turn header: a role name in brackets
// anywhere ("[system]", "(SYSTEM NOTE)", "【系统】") or as a markdown heading
// ("### System:"), or at the start of a line a header name before a colon
// when written in capitals ("SYSTEM: …") or followed by words addressed to
// the agent ("System: you are …"). "System: Ubuntu 24.04" is a note about
// the user's machine and passes.
func hasRoleHeader(s string) bool {
	for i, r := range s {
		if !unicode.Is(unicode.Ps, r) {
			continue
		}
		rest := s[i+utf8.RuneLen(r):]
		end := strings.IndexFunc(rest, func(r rune) bool { return unicode.Is(unicode.Pe, r) })
		if end > 0 && end <= maxHeaderName && oneOfFold(strings.TrimSpace(rest[:end]), roleNames) {
			return true
		}
	}
	for line := range strings.Lines(s) {
		line = strings.TrimLeft(line, " \t>*-")
		heading := strings.HasPrefix(line, "#")
		line = strings.TrimLeft(line, "# \t")
		name, body, colon := strings.Cut(line, ":")
		name = strings.TrimSpace(strings.Trim(name, "*_ "))
		switch {
		case len(name) > maxHeaderName:
		case heading && oneOfFold(name, roleNames):
			return true
		case !colon:
		case !oneOfFold(name, headerNames):
		case heading || isCapitals(name) || addressesAgent(body):
			return true
		}
	}
	return false
}

func oneOfFold(w string, set []string) bool {
	for _, s := range set {
		if strings.EqualFold(w, s) {
			return true
		}
	}
	return false
}

// isCapitals reports a word written in capitals: cased letters, none of
// them lower-case ("SYSTEM", not "系统" or "System").
func isCapitals(s string) bool {
	upper := false
	for _, r := range s {
		if unicode.IsLower(r) {
			return false
		}
		upper = upper || unicode.IsUpper(r)
	}
	return upper
}

// addressesAgent reports a header's body that speaks to the agent.
func addressesAgent(body string) bool {
	t := prepare(body)
	for i := range min(len(t.words), 3) {
		if oneOf(t.word(i), secondPerson) || classOf(foldWord(t.word(i)))&(wOverride|wNegation) != 0 {
			return true
		}
	}
	return false
}

// forgesFraming finds clawmem's framing markers or their look-alikes:
// "[END UNTRUSTED DATA]", "untrusted-data", "relevant_memories"; lower
// must be normalised and lower-cased.
func forgesFraming(lower string) bool {
	for _, name := range []string{"relevant-memories", "relevant_memories", "relevantmemories", "relevant memories>"} {
		if strings.Contains(lower, name) {
			return true
		}
	}
	for i := 0; ; {
		j := strings.Index(lower[i:], "untrusted")
		if j < 0 {
			return false
		}
		at := i + j
		i = at + len("untrusted")
		before := strings.TrimRightFunc(lower[:at], notLetterOrDigit)
		after := strings.TrimLeftFunc(lower[i:], notLetterOrDigit)
		if strings.HasSuffix(before, "end") || strings.HasSuffix(before, "end of") ||
			strings.HasPrefix(after, "data") && (bracketNear(lower[:at], true) || bracketNear(after[len("data"):], false)) {
			return true
		}
	}
}

// bracketNear reports an opening bracket (before) at the end of s or a
// closing one (!before) at its start, a few spaces and marks aside.
func bracketNear(s string, before bool) bool {
	want := unicode.Pe
	if before {
		want = unicode.Ps
	}
	for range 8 {
		var r rune
		var n int
		if before {
			r, n = utf8.DecodeLastRuneInString(s)
			s = s[:len(s)-n]
		} else {
			r, n = utf8.DecodeRuneInString(s)
			s = s[n:]
		}
		switch {
		case n == 0:
			return false
		case unicode.Is(want, r):
			return true
		case !unicode.IsSpace(r) && !unicode.IsPunct(r) && !unicode.IsSymbol(r):
			return false
		}
	}
	return false
}

// maxToolSpan is how far apart, in bytes, "run" and "tool" may be for the
// pair to read as an instruction to call a tool.
const maxToolSpan = 40

var (
	toolVerbs    = []string{"run", "execute", "call", "invoke"}
	toolNouns    = []string{"tool", "tools", "command", "commands"}
	toolSubjects = []string{"i", "we", "they", "he", "she", "always", "usually", "never", "to"}
)

func runsTool(t *text) bool {
	if !strings.Contains(t.lower, "tool") && !strings.Contains(t.lower, "command") {
		return false
	}
	for i := range t.words {
		// "I run the deploy command on Fridays" says what the user does.
		if !oneOf(t.word(i), toolVerbs) || i > 0 && oneOf(t.word(i-1), toolSubjects) {
			continue
		}
		for k := i + 1; k < len(t.words) && t.words[k].start-t.words[i].end <= maxToolSpan; k++ {
			if oneOf(t.word(k), toolNouns) {
				return true
			}
		}
	}
	return false
}
