package distill

import (
	"encoding/json"
	"strings"

	"google.golang.org/genai"
)

// Schema is the subset of JSON Schema that both Gemini's responseSchema and
// OpenAI's strict json_schema accept. Every property is required (OpenAI's
// strict mode demands it; an empty array says "none").
type Schema struct {
	Type        string // object, array, string, number, integer, boolean
	Description string
	Properties  []Property // objects, in the order the model should write them
	Items       *Schema    // arrays
	Enum        []string   // strings
	Minimum     *float64
	Maximum     *float64
}

// Property is one named member of an object schema.
type Property struct {
	Name   string
	Schema *Schema
}

// MarshalJSON writes standard JSON Schema, closed to extra members, as
// OpenAI's json_schema response format takes it.
func (s *Schema) MarshalJSON() ([]byte, error) {
	out := map[string]any{"type": s.Type}
	if s.Description != "" {
		out["description"] = s.Description
	}
	if s.Type == "object" {
		props := make(map[string]*Schema, len(s.Properties))
		required := make([]string, 0, len(s.Properties))
		for _, p := range s.Properties {
			props[p.Name] = p.Schema
			required = append(required, p.Name)
		}
		out["properties"], out["required"], out["additionalProperties"] = props, required, false
	}
	if s.Items != nil {
		out["items"] = s.Items
	}
	if len(s.Enum) > 0 {
		out["enum"] = s.Enum
	}
	if s.Minimum != nil {
		out["minimum"] = *s.Minimum
	}
	if s.Maximum != nil {
		out["maximum"] = *s.Maximum
	}
	return json.Marshal(out)
}

// genai converts the schema to Gemini's form, keeping property order.
func (s *Schema) genai() *genai.Schema {
	if s == nil {
		return nil
	}
	g := &genai.Schema{
		Type:        genai.Type(strings.ToUpper(s.Type)),
		Description: s.Description,
		Items:       s.Items.genai(),
		Enum:        s.Enum,
		Minimum:     s.Minimum,
		Maximum:     s.Maximum,
	}
	if len(s.Properties) > 0 {
		g.Properties = make(map[string]*genai.Schema, len(s.Properties))
		for _, p := range s.Properties {
			g.Properties[p.Name] = p.Schema.genai()
			g.PropertyOrdering = append(g.PropertyOrdering, p.Name)
			g.Required = append(g.Required, p.Name)
		}
	}
	return g
}

// LessonsSchema is the shape map and reduce calls answer in.
func LessonsSchema() *Schema {
	str := &Schema{Type: "string"}
	strs := func(desc string) *Schema { return &Schema{Type: "array", Description: desc, Items: str} }
	zero, one := 0.0, 1.0
	categories := []string{"preference", "fact", "decision", "entity", "reflection"}
	evidence := &Schema{Type: "object", Properties: []Property{
		{"message_ids", &Schema{Type: "array", Description: "numbers of the quoted messages", Items: &Schema{Type: "integer"}}},
		{"quote", &Schema{Type: "string", Description: "verbatim excerpt of those messages"}},
	}}
	lesson := &Schema{Type: "object", Properties: []Property{
		{"category", &Schema{Type: "string", Enum: categories}},
		{"importance", &Schema{Type: "number", Minimum: &zero, Maximum: &one}},
		{"text", &Schema{Type: "string", Description: "the lesson, at most 480 characters"}},
		{"evidence", &Schema{Type: "array", Items: evidence}},
		{"tags", strs("one to three short labels")},
		{"keywords", strs("search keywords")},
		{"keywords_zh", strs("Chinese search keywords, or empty")},
	}}
	return &Schema{Type: "object", Properties: []Property{{"lessons", &Schema{Type: "array", Items: lesson}}}}
}
