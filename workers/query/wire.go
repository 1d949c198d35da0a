package query

// Wire: how requests are decoded and checked, and replies made, for every
// operation. The shapes themselves are package schemas'.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/clawmem/clawmem/schemas"
)

// okReply is a successful operation's reply.
type okReply struct {
	text    string
	details any
	label   string // metrics result; "" means ok
}

func (o okReply) result() schemas.ToolResult { return schemas.Reply(o.text, o.details) }

// Request bodies: the schemas request plus agentId, which bridges forward
// with the tool arguments. It is accepted so such requests work, and never
// read: the subject names the agent.
type (
	ignoredFields struct {
		AgentID json.RawMessage `json:"agentId,omitempty"`
	}
	recallBody struct {
		schemas.RecallRequest
		ignoredFields
	}
	contextBody struct {
		schemas.ContextRequest
		ignoredFields
	}
	storeBody struct {
		schemas.StoreRequest
		ignoredFields
	}
	forgetBody struct {
		schemas.ForgetRequest
		ignoredFields
	}
	updateBody struct {
		schemas.UpdateRequest
		ignoredFields
	}
	listBody struct {
		schemas.ListRequest
		ignoredFields
	}
	statsBody struct {
		schemas.StatsRequest
		ignoredFields
	}
	showBody struct {
		schemas.ShowRequest
		ignoredFields
	}
)

// decode strictly decodes a JSON object into v: unknown fields, wrong
// types and trailing data are errors naming what was wrong. An empty body
// is an empty object, so requests whose fields are all optional need none.
func decode(data []byte, v any) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	if data[0] != '{' {
		return fmt.Errorf("%w: the request must be a JSON object with the fields %s", schemas.ErrInvalid, fieldList(v))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return fmt.Errorf("%w: malformed JSON at byte %d: %s", schemas.ErrInvalid, syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
		case errors.As(err, &typ) && typ.Field != "":
			return fmt.Errorf("%w: field %q must be %s, not a JSON %s", schemas.ErrInvalid, fieldName(typ.Field), typeName(typ.Type), typ.Value)
		case errors.As(err, &typ):
			return fmt.Errorf("%w: the request must be a JSON object, not a JSON %s", schemas.ErrInvalid, typ.Value)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("%w: malformed JSON: the request ends early", schemas.ErrInvalid)
		case strings.Contains(err.Error(), "unknown field"):
			return fmt.Errorf("%w: %s (this request takes %s)", schemas.ErrInvalid, strings.TrimPrefix(err.Error(), "json: "), fieldList(v))
		}
		return fmt.Errorf("%w: %s", schemas.ErrInvalid, strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: unexpected data after the JSON object", schemas.ErrInvalid)
	}
	return nil
}

// fieldName drops the Go path encoding/json reports for fields of
// embedded structs ("RecallRequest.query" → "query").
func fieldName(field string) string {
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		return field[i+1:]
	}
	return field
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.Slice:
		if t == reflect.TypeFor[json.RawMessage]() {
			return "a JSON object"
		}
		return "an array"
	}
	return t.String()
}

// fieldList names the JSON fields of the request type v points to.
func fieldList(v any) string {
	var names []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" && name != "agentId" {
				names = append(names, name)
			}
		}
	}
	walk(reflect.TypeOf(v).Elem())
	return strings.Join(names, ", ")
}

func parseCategory(s string) (schemas.Category, error) {
	if s == "" {
		return "", nil
	}
	return schemas.ParseCategory(s)
}

func checkImportance(p *float64) error {
	if p != nil && (*p < 0 || *p > 1) {
		return fmt.Errorf("%w: importance %v is outside 0..1", schemas.ErrInvalid, *p)
	}
	return nil
}
