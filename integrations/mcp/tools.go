package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawmem/clawmem/schemas"
)

// Tool names: the seed plugin's, so that prompts written for OpenClaw work
// unchanged in any MCP client.
const (
	ToolRecall = "memory_recall"
	ToolStore  = "memory_store"
	ToolForget = "memory_forget"
	ToolUpdate = "memory_update"
	ToolStats  = "memory_stats"
	ToolList   = "memory_list"
)

// Bounds the tools advertise and check. The query service has its own
// (it caps recall at 20, refuses importance outside 0..1); checking them
// here too lets the model see them in the schema and get a plain
// sentence back when it strays.
const (
	maxRecallLimit = 20
	maxListLimit   = 50
	maxOffset      = math.MaxInt32
)

// kind is a parameter's JSON type.
type kind string

const (
	kindString  kind = "string"
	kindInteger kind = "integer"
	kindNumber  kind = "number"
	kindObject  kind = "object"
	kindBoolean kind = "boolean"
)

// param is one tool parameter. The advertised JSON Schema and the check
// of a call's arguments are both made from it, so they cannot disagree.
type param struct {
	name     string
	kind     kind
	desc     string
	required bool
	nonEmpty bool     // strings: at least one character
	enum     []string // strings: one of these
	min, max *float64 // numbers and integers: inclusive bounds, both set
}

// toolSpec is one tool: what clients see, and the service operation a call
// becomes. newReq returns a pointer to the operation's request type, which
// checked arguments are decoded into.
type toolSpec struct {
	name        string
	desc        string
	op          string
	management  bool
	annotations *sdk.ToolAnnotations
	params      []param
	newReq      func() any
}

func str(name, desc string) param { return param{name: name, kind: kindString, desc: desc} }

func boolean(name, desc string) param { return param{name: name, kind: kindBoolean, desc: desc} }

// history is the flag that also reaches facts that no longer hold.
func history(what string) param {
	return boolean("includeSuperseded", "Also "+what+" facts that no longer hold (superseded or archived), e.g. where the user lived before (optional)")
}

func text(name, desc string, required bool) param {
	return param{name: name, kind: kindString, desc: desc, required: required, nonEmpty: true}
}

func integer(name, desc string, lo, hi float64) param {
	return param{name: name, kind: kindInteger, desc: desc, min: &lo, max: &hi}
}

func importance(desc string) param {
	lo, hi := 0.0, 1.0
	return param{name: "importance", kind: kindNumber, desc: desc, min: &lo, max: &hi}
}

func category(desc string) param {
	names := make([]string, len(schemas.Categories))
	for i, c := range schemas.Categories {
		names[i] = string(c)
	}
	return param{name: "category", kind: kindString, desc: desc, enum: names}
}

// toolSpecs lists the tools. Names, parameters and descriptions are the
// seed plugin's (src/tools.ts), adjusted where clawmem behaves differently
// (list's default page, store's metadata, update's scope).
func toolSpecs() []toolSpec {
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}
	return []toolSpec{
		{
			name: ToolRecall, op: schemas.OpRecall, annotations: readOnly,
			desc: "Search through long-term memories using hybrid retrieval (vector + keyword search). Use when you need " +
				"context about user preferences, past decisions, or previously discussed topics. Returns memories with " +
				"scores and where each hit came from (vector, BM25, reranked).",
			params: []param{
				text("query", "Search query for finding relevant memories", true),
				integer("limit", "Max results to return (default: 5, max: 20)", 1, maxRecallLimit),
				str("scope", "Specific memory scope to search in (optional; default: every scope this agent may read)"),
				category("Only memories of this category (optional)"),
				history("search"),
			},
			newReq: func() any { return new(schemas.RecallRequest) },
		},
		{
			name: ToolStore, op: schemas.OpStore,
			annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(false)},
			desc: "Save important information in long-term memory. Use for preferences, facts, decisions, and other " +
				"notable information. Greetings and boilerplate are rejected as noise, and a near-duplicate of an " +
				"existing memory is not stored again. When a fact changes, pass the old memory's id as supersedes: it is " +
				"kept as history and no longer recalled.",
			params: []param{
				text("text", "Information to remember", true),
				importance("Importance score 0-1 (default: 0.7)"),
				category("Memory category (default: other)"),
				str("scope", "Memory scope (optional, defaults to agent scope)"),
				{name: "metadata", kind: kindObject, desc: "Extra JSON attributes kept with the memory (optional)"},
				text("supersedes", "Id (or 8+ char prefix) of a memory this one replaces (optional)", false),
			},
			newReq: func() any { return new(schemas.StoreRequest) },
		},
		{
			name: ToolForget, op: schemas.OpForget,
			annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)},
			desc: "Delete specific memories. Supports both search-based and direct ID-based deletion: with memoryId " +
				"that memory is deleted; with query a memory is deleted only when exactly one matches with high " +
				"confidence, otherwise the candidates are listed with their short ids.",
			params: []param{
				text("query", "Search query to find memory to delete (give this or memoryId)", false),
				text("memoryId", "Specific memory ID to delete: the full id or its first 8+ characters (give this or query)", false),
				str("scope", "Scope to search/delete from (optional)"),
			},
			newReq: func() any { return new(schemas.ForgetRequest) },
		},
		{
			name: ToolUpdate, op: schemas.OpUpdate,
			annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: new(false)},
			desc: "Update an existing memory in-place. Preserves original timestamp; a changed text keeps the old one as history. Use when correcting outdated info " +
				"or adjusting importance/category without losing creation date. If memoryId is not an id it is used " +
				"as a search query, and candidates are listed unless exactly one matches confidently.",
			params: []param{
				text("memoryId", "ID of the memory to update (full id or 8+ char prefix); anything else is used as a search query", true),
				text("text", "New text content (triggers re-embedding)", false),
				importance("New importance score 0-1"),
				category("New category"),
				str("scope", "Scope to look for the memory in (optional)"),
			},
			newReq: func() any { return new(schemas.UpdateRequest) },
		},
		{
			name: ToolStats, op: schemas.OpStats, management: true, annotations: readOnly,
			desc: "Get statistics about memory usage, scopes, and categories.",
			params: []param{
				str("scope", "Specific scope to get stats for (optional)"),
			},
			newReq: func() any { return new(schemas.StatsRequest) },
		},
		{
			name: ToolList, op: schemas.OpList, management: true, annotations: readOnly,
			desc: "List recent memories, newest first, with optional filtering by scope and category.",
			params: []param{
				integer("limit", "Max memories to list (default: 20, max: 50)", 1, maxListLimit),
				integer("offset", "Number of memories to skip (default: 0)", 0, maxOffset),
				str("scope", "Filter by specific scope (optional)"),
				category("Filter by category (optional)"),
				history("list"),
			},
			newReq: func() any { return new(schemas.ListRequest) },
		},
	}
}

// inputSchema is the JSON Schema clients see for the tool's arguments.
func (t toolSpec) inputSchema() *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{},
		// Unknown arguments are refused: agentId in particular must never
		// look as if it chose whose memories are used.
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	for _, p := range t.params {
		ps := &jsonschema.Schema{Type: string(p.kind), Description: p.desc, Minimum: p.min, Maximum: p.max}
		if p.nonEmpty {
			ps.MinLength = new(1)
		}
		for _, e := range p.enum {
			ps.Enum = append(ps.Enum, e)
		}
		s.Properties[p.name] = ps
		s.PropertyOrder = append(s.PropertyOrder, p.name)
		if p.required {
			s.Required = append(s.Required, p.name)
		}
	}
	return s
}

// request checks a call's arguments against the tool's parameters and
// decodes them into the service request. Its errors are sentences for the
// model that made the call: what is wrong and what is expected.
func (t toolSpec) request(raw json.RawMessage, agent string) (any, error) {
	// Decoding would turn bad bytes into U+FFFD and store that text; the
	// query service refuses such a request, and so does the tool.
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("invalid arguments for %s: they are not valid UTF-8", t.name)
	}
	args := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		// Numbers stay as written, so that metadata passes through exactly.
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil {
			return nil, fmt.Errorf("invalid arguments for %s: they must be a JSON object", t.name)
		}
	}
	var problems []string
	for k, v := range args {
		// Clients often send null for an optional parameter they leave out.
		if v == nil {
			delete(args, k)
			continue
		}
		if !slices.ContainsFunc(t.params, func(p param) bool { return p.name == k }) {
			msg := fmt.Sprintf("unknown argument %q (%s takes %s)", k, t.name, t.paramNames())
			if k == "agentId" {
				msg = fmt.Sprintf("unknown argument %q: this server always acts for agent %q (%s takes %s)", k, agent, t.name, t.paramNames())
			}
			problems = append(problems, msg)
		}
	}
	slices.Sort(problems)
	for _, p := range t.params {
		v, ok := args[p.name]
		if !ok {
			if p.required {
				problems = append(problems, fmt.Sprintf("%q is required", p.name))
			}
			continue
		}
		v, msg := p.check(v)
		if msg != "" {
			problems = append(problems, msg)
		}
		args[p.name] = v
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("invalid arguments for %s: %s", t.name, strings.Join(problems, "; "))
	}
	clean, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("invalid arguments for %s: %w", t.name, err)
	}
	req := t.newReq()
	if err := json.Unmarshal(clean, req); err != nil {
		return nil, fmt.Errorf("invalid arguments for %s: %w", t.name, err)
	}
	return req, nil
}

func (t toolSpec) paramNames() string {
	names := make([]string, len(t.params))
	for i, p := range t.params {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

// check returns v as p's value (a number as float64, an integer as
// int64, which the request's int fields decode whatever way it was
// written), or what is wrong with it.
func (p param) check(v any) (any, string) {
	switch p.kind {
	case kindString:
		s, ok := v.(string)
		switch {
		case !ok:
			return v, fmt.Sprintf("%q must be a string, not %s", p.name, describe(v))
		case p.nonEmpty && s == "":
			return v, fmt.Sprintf("%q must not be empty", p.name)
		case len(p.enum) > 0 && !slices.Contains(p.enum, s):
			return v, fmt.Sprintf("%q must be one of %s, not %q", p.name, strings.Join(p.enum, ", "), s)
		}
	case kindInteger, kindNumber:
		n, ok := v.(json.Number)
		if !ok {
			return v, fmt.Sprintf("%q must be %s, not %s", p.name, article(p.kind), describe(v))
		}
		f, err := n.Float64()
		switch {
		case err != nil:
			return v, fmt.Sprintf("%q must be %s, not %s", p.name, article(p.kind), n)
		case p.kind == kindInteger && f != math.Trunc(f):
			return v, fmt.Sprintf("%q must be an integer, not %s", p.name, n)
		case f < *p.min || f > *p.max:
			return v, fmt.Sprintf("%q must be between %s and %s, not %s", p.name, num(*p.min), num(*p.max), n)
		case p.kind == kindInteger:
			return int64(f), ""
		}
		return f, ""
	case kindObject:
		if _, ok := v.(map[string]any); !ok {
			return v, fmt.Sprintf("%q must be a JSON object, not %s", p.name, describe(v))
		}
	case kindBoolean:
		if _, ok := v.(bool); !ok {
			return v, fmt.Sprintf("%q must be true or false, not %s", p.name, describe(v))
		}
	}
	return v, ""
}

func article(k kind) string {
	if k == kindInteger {
		return "an integer"
	}
	return "a number"
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// describe names a decoded JSON value for an error message.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", v)
	case json.Number:
		return "the number " + v.String()
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "null"
}
