package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/schemas/schemagen"
)

// Doc is the OpenAPI 3.1 description of the API, as GET /v1/openapi.json
// serves it. It is made from the route table and, for every body and
// parameter, from the JSON Schema of the Go type the handler decodes
// (schemagen, as the files in schemas/jsonschema are): what it documents is
// what the handlers read.
func Doc() map[string]any {
	comps := map[string]any{}
	paths := map[string]map[string]any{}
	result := ref(comps, "tool-result", schemas.ToolResult{})
	for _, rt := range routes {
		op := map[string]any{
			"operationId": operationID(rt),
			"summary":     rt.summary,
			"security":    []any{map[string]any{"bearer": []any{}}, map[string]any{"token": []any{}}},
		}
		var params []any
		if rt.idField != "" {
			params = append(params, map[string]any{"name": "id", "in": "path", "required": true,
				"description": "the memory's id, or a prefix of at least 8 characters", "schema": map[string]any{"type": "string"}})
		}
		switch rt.from {
		case fromBody:
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
				"application/json": map[string]any{"schema": ref(comps, schemaName(rt.req), rt.req)}}}
		case fromQuery:
			params = append(params, queryParams(rt)...)
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		responses := map[string]any{"200": response("the operation's reply: content for a model, details for code", result)}
		for _, code := range rt.errors {
			responses[strconv.Itoa(code)] = response(errorMeaning[code], result)
		}
		op["responses"] = responses
		if paths[rt.path] == nil {
			paths[rt.path] = map[string]any{}
		}
		paths[rt.path][strings.ToLower(rt.method)] = op
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "clawmem HTTP API",
			"version": "1",
			"description": "Every operation acts for the agent its token names. Replies are tool results " +
				"(content for a model, details for code); an error reply carries details.code, whose HTTP " +
				"status is given per response here. The same operations are served over NATS at " +
				"clawmem.v1.<agent>.<op> with the same request and reply bodies.",
		},
		"paths": paths,
		"components": map[string]any{
			"schemas": comps,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer",
					"description": "the agent's token: clawmem agent token AGENT"},
				"token": map[string]any{"type": "apiKey", "in": "header", "name": "Authorization",
					"description": "Token <the agent's token>, as mem0's clients send it"},
			},
		},
	}
}

// errorMeaning is each documented error status's description.
var errorMeaning = map[int]string{
	http.StatusBadRequest: "invalid: malformed JSON, an unknown field or parameter, a value of the wrong type " +
		"or range, invalid UTF-8",
	http.StatusUnauthorized:          "no_identity: no token, or one no agent holds",
	http.StatusForbidden:             "denied: the agent may not use the scope it named",
	http.StatusNotFound:              "not_found: no such memory for this agent (another agent's memory is not found too)",
	http.StatusConflict:              "ambiguous: the id prefix matches more than one memory (details.matches)",
	http.StatusRequestEntityTooLarge: "the body is over 1 MiB",
	http.StatusUnsupportedMediaType:  "the body is not declared Content-Type: application/json",
	http.StatusUnprocessableEntity:   "rejected: the text is noise or looks like prompt injection",
	http.StatusServiceUnavailable:    "unavailable: no query service answered; retry (Retry-After)",
}

// mustDoc renders Doc; the route table is code, so a failure is a bug.
func mustDoc() []byte {
	b, err := json.MarshalIndent(Doc(), "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

func operationID(rt route) string {
	switch rt.pattern() {
	case "DELETE /v1/memories/{id}":
		return "forgetById"
	case "POST /v1/import":
		return "importBatch"
	}
	return rt.op
}

// schemaName is the component name of a request type: its name in
// schemagen.Types, or for the API's own types, derived from the Go name.
func schemaName(v any) string {
	t := reflect.TypeOf(v)
	for name, tv := range schemagen.Types {
		if reflect.TypeOf(tv) == t {
			return name
		}
	}
	return "http-" + strings.ToLower(t.Name())
}

// ref adds v's schema to comps under name and returns a reference to it.
func ref(comps map[string]any, name string, v any) map[string]any {
	if _, ok := comps[name]; !ok {
		s := schemagen.Schema(v)
		s.Version, s.ID = "", ""
		comps[name] = s
	}
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

func response(desc string, schema map[string]any) map[string]any {
	return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": schema}}}
}

// queryParams documents a query route's parameters: its request type's
// fields, but the one its path fills.
func queryParams(rt route) []any {
	t := reflect.TypeOf(rt.req)
	var out []any
	for i := range t.NumField() {
		name := jsonName(t.Field(i))
		if name == rt.idField {
			continue
		}
		typ := "string"
		switch t.Field(i).Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Uint64:
			typ = "integer"
		case reflect.Bool:
			typ = "boolean"
		}
		out = append(out, map[string]any{"name": name, "in": "query", "schema": map[string]any{"type": typ}})
	}
	return out
}
