package distill

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/clawmem/clawmem/engine/rules"
)

// Consolidation's judge: the model reads memories that look alike and says
// whether they state one fact, and if so writes that fact once.

const judgeSystem = `You maintain the long-term memory of an AI assistant about its user.
You get a few stored memories that look alike. Decide whether they all state the same fact (the same thing said in other words, or one repeating the other).
If they do, answer same=true and write that fact once, as one short statement in the memories' language, keeping every detail any of them has (names, numbers, dates).
If any of them says something the others do not (another person, another time, another value, a change), answer same=false and an empty text.`

// JudgeSchema is the judge's structured answer.
func JudgeSchema() *Schema {
	return &Schema{Type: "object", Properties: []Property{
		{"same", &Schema{Type: "boolean", Description: "whether all the memories state one fact"}},
		{"text", &Schema{Type: "string", Description: "that fact, written once (empty when same is false), at most 500 characters"}},
	}}
}

// JudgeRequest builds the prompt for memories that look alike.
func JudgeRequest(texts []string) Request {
	var b strings.Builder
	lines := make([]rules.FramedMemory, len(texts))
	for i, t := range texts {
		lines[i] = rules.FramedMemory{Label: strconv.Itoa(i+1) + ".", Text: t}
	}
	b.WriteString("<memories>\n" + rules.FrameMemories(lines, 0) + "\n</memories>\n\nAnswer as JSON.")
	return Request{System: judgeSystem, Prompt: b.String(), Schema: JudgeSchema()}
}

// ParseJudgement reads a judge's answer: whether the memories are one fact,
// and the fact. An answer that is not the JSON asked for, or says same
// with an empty, oversized or invalid text, is refused (ErrRefused).
func ParseJudgement(answer string) (same bool, text string, err error) {
	if len(answer) > MaxExtractAnswer {
		return false, "", fmt.Errorf("%w: the answer is %d bytes (max %d)", ErrRefused, len(answer), MaxExtractAnswer)
	}
	var wire struct {
		Same *bool  `json:"same"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal([]byte(stripFence(answer)), &wire); err != nil || wire.Same == nil {
		return false, "", fmt.Errorf("%w: not the JSON asked for", ErrRefused)
	}
	if !*wire.Same {
		return false, "", nil
	}
	text = strings.TrimSpace(wire.Text)
	switch {
	case text == "":
		return false, "", fmt.Errorf("%w: same, but no text", ErrRefused)
	case !utf8.ValidString(text) || strings.IndexByte(text, 0) >= 0:
		return false, "", fmt.Errorf("%w: the text is not valid", ErrRefused)
	case utf8.RuneCountInString(text) > MaxFactChars:
		return false, "", fmt.Errorf("%w: the text is %d characters (max %d)", ErrRefused, utf8.RuneCountInString(text), MaxFactChars)
	}
	return true, text, nil
}
