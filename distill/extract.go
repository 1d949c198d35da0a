package distill

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/clawmem/clawmem/engine/rules"
)

// Smart extraction: for one captured turn, the model reads what the user
// said and the agent's memories most like it, and decides per atomic fact
// whether to ADD it, UPDATE (supersede) a memory, DELETE (invalidate) one,
// or do nothing. Memories are shown under aliases (m1, m2, …), so an
// answer can only name memories it was shown: any other id is refused.

// Extraction actions.
const (
	ActionAdd    = "ADD"
	ActionUpdate = "UPDATE"
	ActionDelete = "DELETE"
	ActionNoop   = "NOOP"
)

// Known is an existing memory shown to the model, under its alias.
type Known struct {
	Alias string
	ID    string
	Text  string
	// Scope is where the memory is: a decision about it is written by
	// that scope's writer. It is never shown to the model.
	Scope string
}

// Decision is one validated decision: Target is the memory's id (not its
// alias) for UPDATE and DELETE; Text is the fact for ADD and UPDATE.
type Decision struct {
	Action     string
	Text       string
	Target     string
	Category   string
	Importance float64
}

// Limits on an extraction answer.
const (
	// MaxExtractAnswer bounds the model's text: a turn's facts fit in a
	// few kilobytes, and a 10 MB answer is refused unread.
	MaxExtractAnswer = 64 << 10
	// MaxFactChars bounds one fact.
	MaxFactChars = 500
	// MaxDecisions bounds the decisions of one turn.
	MaxDecisions = 20
)

// ErrRefused wraps every reason an extraction answer is not used; the
// caller then falls back to the capture rules for that turn.
var ErrRefused = errors.New("extraction answer refused")

const extractSystem = `You maintain the long-term memory of an AI assistant about its user.
You get what the user said in one conversation turn and the memories already stored that are most like it, each with an alias (m1, m2, ...).
Extract the durable, atomic facts the user stated about themselves, their preferences, decisions, people, pets, work and plans: one fact per item, in the user's language, as a short first-person statement ("I live in Berlin", "My daughter is seven").
For each fact decide:
- ADD: new information no stored memory holds.
- UPDATE: it changes what a stored memory says (the user moved, changed job, a new value for the same thing); give that memory's alias as target. The stored memory is kept as history.
- DELETE: the user says a stored memory is no longer true and gives no new value; give its alias as target, and the fact text that says so.
- NOOP: a stored memory already says it.
Ignore questions, greetings, requests to the assistant and anything about the assistant itself. Never invent facts. Only use aliases from the list. If nothing is worth remembering, return an empty list.`

// ExtractSchema is the structured answer the model writes.
func ExtractSchema() *Schema {
	zero, one := 0.0, 1.0
	item := &Schema{Type: "object", Properties: []Property{
		{"action", &Schema{Type: "string", Enum: []string{ActionAdd, ActionUpdate, ActionDelete, ActionNoop}}},
		{"text", &Schema{Type: "string", Description: "the atomic fact, at most 300 characters"}},
		{"target", &Schema{Type: "string", Description: "alias of the stored memory (m1, m2, ...) for UPDATE, DELETE and NOOP; empty for ADD"}},
		{"category", &Schema{Type: "string", Enum: []string{"preference", "fact", "decision", "entity", "other"}}},
		{"importance", &Schema{Type: "number", Minimum: &zero, Maximum: &one}},
	}}
	return &Schema{Type: "object", Properties: []Property{{"facts", &Schema{Type: "array", Items: item}}}}
}

// ExtractRequest builds the prompt for one turn's messages and the memories
// most like them.
func ExtractRequest(said []string, known []Known) Request {
	var b strings.Builder
	lines := make([]rules.FramedMemory, len(known))
	for i, k := range known {
		lines[i] = rules.FramedMemory{Label: "[" + k.Alias + "]", Text: k.Text}
	}
	b.WriteString("<stored-memories>\n")
	if framed := rules.FrameMemories(lines, 0); framed != "" {
		b.WriteString(framed + "\n")
	} else {
		b.WriteString("(none)\n")
	}
	b.WriteString("</stored-memories>\n\n<user-said>\n")
	// What the user said is escaped like a memory, so that it cannot close
	// its tag either.
	for _, s := range said {
		b.WriteString(rules.EscapeMemoryText(s, 0))
		b.WriteByte('\n')
	}
	b.WriteString("</user-said>\n\nAnswer with the facts as JSON.")
	return Request{System: extractSystem, Prompt: b.String(), Schema: ExtractSchema()}
}

// ParseDecisions reads and checks an extraction answer against the
// memories the prompt showed. Malformed JSON, an unknown action, a target
// that was not shown (another agent's id, a made-up alias), a fact that is
// empty, too long or not valid UTF-8, more than MaxDecisions decisions, an
// oversized answer, or a sweep — deleting two or more and over half of the
// memories shown, or more than three — refuse the whole answer (ErrRefused).
func ParseDecisions(answer string, known []Known) ([]Decision, error) {
	if len(answer) > MaxExtractAnswer {
		return nil, fmt.Errorf("%w: the answer is %d bytes (max %d)", ErrRefused, len(answer), MaxExtractAnswer)
	}
	var wire struct {
		Facts []struct {
			Action     string   `json:"action"`
			Text       string   `json:"text"`
			Target     string   `json:"target"`
			Category   string   `json:"category"`
			Importance *float64 `json:"importance"`
		} `json:"facts"`
	}
	if err := json.Unmarshal([]byte(stripFence(answer)), &wire); err != nil {
		return nil, fmt.Errorf("%w: not the JSON asked for: %v", ErrRefused, err)
	}
	if len(wire.Facts) > MaxDecisions {
		return nil, fmt.Errorf("%w: %d decisions for one turn (max %d)", ErrRefused, len(wire.Facts), MaxDecisions)
	}
	byAlias := make(map[string]Known, len(known))
	for _, k := range known {
		byAlias[k.Alias] = k
	}
	var out []Decision
	deletes := 0
	for i, f := range wire.Facts {
		d := Decision{Action: strings.ToUpper(strings.TrimSpace(f.Action)), Text: strings.TrimSpace(f.Text), Category: f.Category, Importance: 0.7}
		if f.Importance != nil && *f.Importance >= 0 && *f.Importance <= 1 {
			d.Importance = *f.Importance
		}
		target := strings.TrimSpace(f.Target)
		switch d.Action {
		case ActionAdd:
			target = ""
		case ActionUpdate, ActionDelete, ActionNoop:
			k, ok := byAlias[target]
			if !ok {
				return nil, fmt.Errorf("%w: fact %d names memory %q, which was not shown", ErrRefused, i+1, target)
			}
			d.Target = k.ID
		default:
			return nil, fmt.Errorf("%w: fact %d has action %q", ErrRefused, i+1, f.Action)
		}
		if d.Action == ActionAdd || d.Action == ActionUpdate {
			switch {
			case d.Text == "":
				return nil, fmt.Errorf("%w: fact %d is empty", ErrRefused, i+1)
			case !utf8.ValidString(d.Text) || strings.IndexByte(d.Text, 0) >= 0:
				return nil, fmt.Errorf("%w: fact %d is not valid text", ErrRefused, i+1)
			case utf8.RuneCountInString(d.Text) > MaxFactChars:
				return nil, fmt.Errorf("%w: fact %d is %d characters (max %d)", ErrRefused, i+1, utf8.RuneCountInString(d.Text), MaxFactChars)
			}
		}
		if d.Action == ActionDelete {
			deletes++
		}
		if d.Action != ActionNoop {
			out = append(out, d)
		}
	}
	if deletes > 3 || (deletes >= 2 && 2*deletes > len(known)) {
		return nil, fmt.Errorf("%w: it deletes %d of the %d memories shown", ErrRefused, deletes, len(known))
	}
	return out, nil
}

// stripFence removes a ```json fence some models put around JSON.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	s = strings.TrimPrefix(s, "```")
	s = strings.TrimPrefix(s, "json")
	return strings.TrimSuffix(strings.TrimSpace(s), "```")
}
