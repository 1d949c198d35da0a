package distill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/clawmem/clawmem/schemas"
)

// Lesson limits, from the seed.
const (
	MaxLessonChars     = 480 // a lesson's text, in characters (runes)
	MaxLessonsPerChunk = 8
	maxQuoteChars      = 500
	maxListItems       = 12 // tags, keywords
	maxListItemChars   = 64
	maxEvidence        = 5
	maxIDsPerEvidence  = 20
)

// Lesson is one atomic, self-contained piece of knowledge distilled from a
// session, with the transcript excerpts that support it.
type Lesson struct {
	Category   schemas.Category `json:"category"`
	Importance float64          `json:"importance"`
	Text       string           `json:"text"`
	Evidence   []Evidence       `json:"evidence"`
	Tags       []string         `json:"tags,omitempty"`
	Keywords   []string         `json:"keywords,omitempty"`
	KeywordsZh []string         `json:"keywordsZh,omitempty"`
}

// Evidence is a verbatim quote from the cited messages (numbered as in
// Message.N).
type Evidence struct {
	MessageIDs []int  `json:"messageIds"`
	Quote      string `json:"quote"`
}

// ErrMalformedOutput is wrapped when an LLM's answer is not the lessons JSON.
var ErrMalformedOutput = errors.New("LLM output is not the lessons JSON")

// ParseLessons reads an LLM's answer:
//
//	{"lessons":[{"category","importance","text","evidence":[{"message_ids":[..],"quote":".."}],
//	  "tags":[],"keywords":[],"keywords_zh":[]}]}
//
// The JSON may be wrapped in a markdown code fence. Anything else that is not
// that object is ErrMalformedOutput. Within it, parsing is forgiving: a
// lesson that is not an object or has no text is skipped, an unknown
// category becomes the nearest valid one (reflection by default),
// importance is clamped to [0,1], text is cut to MaxLessonChars, and message
// ids may be numbers or labels such as "U12".
func ParseLessons(output string) ([]Lesson, error) {
	body := unfence(output)
	var top json.RawMessage
	if err := json.Unmarshal([]byte(body), &top); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedOutput, err)
	}
	items, err := lessonItems(top)
	if err != nil {
		return nil, err
	}
	out := make([]Lesson, 0, len(items))
	for _, raw := range items {
		if l, ok := parseLesson(raw); ok {
			out = append(out, l)
		}
	}
	return out, nil
}

// unfence returns the body of the first ``` fence in s, or s itself.
func unfence(s string) string {
	s = strings.TrimSpace(s)
	open := strings.Index(s, "```")
	if open < 0 {
		return s
	}
	rest := s[open+3:]
	nl := strings.IndexByte(rest, '\n')
	if nl < 0 {
		return s
	}
	rest = rest[nl+1:] // drop the info string ("json")
	if end := strings.Index(rest, "```"); end >= 0 {
		rest = rest[:end]
	}
	return strings.TrimSpace(rest)
}

// lessonItems finds the lessons array: the "lessons" member of the object,
// or a bare array, which some models answer with.
func lessonItems(top json.RawMessage) ([]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(top)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(trimmed, &items); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformedOutput, err)
		}
		return items, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return nil, fmt.Errorf("%w: want an object with a lessons array: %v", ErrMalformedOutput, err)
	}
	lessons, ok := obj["lessons"]
	if !ok {
		return nil, fmt.Errorf("%w: no \"lessons\" member", ErrMalformedOutput)
	}
	var items []json.RawMessage // null is no lessons
	if err := json.Unmarshal(lessons, &items); err != nil {
		return nil, fmt.Errorf("%w: \"lessons\" is not an array", ErrMalformedOutput)
	}
	return items, nil
}

// parseLesson reads one lesson; ok is false when it has no usable text.
func parseLesson(raw json.RawMessage) (Lesson, bool) {
	var f map[string]json.RawMessage
	if json.Unmarshal(raw, &f) != nil || f == nil {
		return Lesson{}, false
	}
	text := cleanText(jsonString(f["text"]))
	if text == "" {
		return Lesson{}, false
	}
	return Lesson{
		Category:   mapCategory(jsonString(f["category"])),
		Importance: schemas.ClampImportance(jsonNumber(f["importance"], schemas.DefaultImportance)),
		Text:       text,
		Evidence:   parseEvidence(f["evidence"]),
		Tags:       cleanList(jsonStrings(f["tags"])),
		Keywords:   cleanList(jsonStrings(f["keywords"])),
		KeywordsZh: cleanList(jsonStrings(firstOf(f, "keywords_zh", "keywordsZh"))),
	}, true
}

func firstOf(f map[string]json.RawMessage, keys ...string) json.RawMessage {
	for _, k := range keys {
		if v, ok := f[k]; ok {
			return v
		}
	}
	return nil
}

func parseEvidence(raw json.RawMessage) []Evidence {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []Evidence
	for _, item := range items {
		var f map[string]json.RawMessage
		if json.Unmarshal(item, &f) != nil || f == nil {
			continue
		}
		quote := strings.TrimSpace(jsonString(f["quote"]))
		ids := parseIDs(firstOf(f, "message_ids", "messageIds", "message_id", "ids"))
		if quote == "" || len(ids) == 0 {
			continue
		}
		out = append(out, Evidence{MessageIDs: ids, Quote: cutRunes(quote, maxQuoteChars)})
	}
	return out
}

// parseIDs reads message ids given as numbers, numeric strings or labels
// ("U12", "[A13]", "#7"), alone or in an array.
func parseIDs(raw json.RawMessage) []int {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		items = []json.RawMessage{raw}
	}
	var out []int
	for _, item := range items {
		id, ok := parseID(item)
		if !ok || slices.Contains(out, id) {
			continue
		}
		out = append(out, id)
		if len(out) == maxIDsPerEvidence {
			break
		}
	}
	return out
}

func parseID(raw json.RawMessage) (int, bool) {
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		if f >= 1 && f <= 1e9 && f == float64(int(f)) {
			return int(f), true
		}
		return 0, false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0, false
	}
	s = strings.Trim(strings.TrimSpace(s), "[]#")
	if s != "" && strings.ContainsRune("UuAa", rune(s[0])) {
		s = s[1:]
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1
}

// mapCategory maps a model's category to a valid one. Lessons are mostly
// reflections (pitfalls, insights), so that is the default.
func mapCategory(s string) schemas.Category {
	c := strings.ToLower(strings.TrimSpace(s))
	if cat := schemas.Category(c); cat.Valid() {
		return cat
	}
	switch strings.TrimSuffix(c, "s") {
	case "preference", "like", "habit", "style":
		return schemas.CategoryPreference
	case "decision", "choice", "plan":
		return schemas.CategoryDecision
	case "fact", "knowledge", "environment", "setup", "config":
		return schemas.CategoryFact
	case "entity", "entitie", "person", "people", "contact", "project":
		return schemas.CategoryEntity
	}
	return schemas.CategoryReflection
}

func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// jsonNumber reads a number or a numeric string; anything else is def.
func jsonNumber(raw json.RawMessage, def float64) float64 {
	var f float64
	if string(bytes.TrimSpace(raw)) != "null" && json.Unmarshal(raw, &f) == nil {
		return f
	}
	if f, err := strconv.ParseFloat(strings.TrimSpace(jsonString(raw)), 64); err == nil {
		return f
	}
	return def
}

// jsonStrings reads an array of strings (other elements skipped) or a
// single string.
func jsonStrings(raw json.RawMessage) []string {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		if s := jsonString(raw); s != "" {
			return []string{s}
		}
		return nil
	}
	var out []string
	for _, item := range items {
		if s := jsonString(item); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// cleanText collapses whitespace and cuts text to MaxLessonChars.
func cleanText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > MaxLessonChars {
		s = strings.TrimSpace(cutRunes(s, MaxLessonChars-1)) + "…"
	}
	return s
}

// cleanList trims, cuts and de-duplicates (case-insensitively) a keyword or
// tag list, keeping at most maxListItems.
func cleanList(items []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range items {
		s = cutRunes(strings.Join(strings.Fields(s), " "), maxListItemChars)
		key := strings.ToLower(s)
		if s == "" || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, s)
		if len(out) == maxListItems {
			break
		}
	}
	return out
}
