package rules

import "strings"

// IsInjection reports text that tries to steer the agent: overriding its
// instructions, naming its system prompt, forging role tags, or telling it to
// run a tool. Such text is neither captured nor stored, since a memory is
// replayed into later prompts.
func IsInjection(text string) bool {
	t := prepare(text)
	return t.has(ruleInjection) || hasRoleTag(t.lower) || runsTool(&t)
}

// roleTags are the tag names that mark a turn or a tool exchange in chat
// templates and in clawmem's own recall block.
var roleTags = []string{
	"system", "assistant", "user", "developer", "tool", "tool_call", "tool_result", "tool_use",
	"function_call", "function", "relevant-memories",
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

// maxToolSpan is how far apart, in bytes, "run" and "tool" may be for the
// pair to read as an instruction to call a tool.
const maxToolSpan = 40

var (
	toolVerbs = []string{"run", "execute", "call", "invoke"}
	toolNouns = []string{"tool", "tools", "command", "commands"}
)

func runsTool(t *text) bool {
	if !strings.Contains(t.lower, "tool") && !strings.Contains(t.lower, "command") {
		return false
	}
	for i := range t.words {
		if !oneOf(t.word(i), toolVerbs) {
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
