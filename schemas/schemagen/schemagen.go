// Package schemagen renders the JSON Schemas of clawmem's wire types. The
// committed files in schemas/jsonschema (for publishers in other
// languages) and the schemas of the HTTP API's OpenAPI description are
// both made here, from the same Go types with the same settings: one
// source, so the two cannot disagree.
package schemagen

import (
	"github.com/invopop/jsonschema"

	"github.com/clawmem/clawmem/schemas"
)

// Types maps each schema's name (its file name without .json) to the Go
// type it describes.
var Types = map[string]any{
	"hook-event":          schemas.HookEvent{},
	"agent-end-event":     schemas.AgentEndEvent{},
	"prompt-build-event":  schemas.PromptBuildEvent{},
	"session-event":       schemas.SessionEvent{},
	"message-event":       schemas.MessageEvent{},
	"message":             schemas.Message{},
	"work-batch":          schemas.WorkBatch{},
	"memory":              schemas.Memory{},
	"recall-request":      schemas.RecallRequest{},
	"context-request":     schemas.ContextRequest{},
	"store-request":       schemas.StoreRequest{},
	"forget-request":      schemas.ForgetRequest{},
	"update-request":      schemas.UpdateRequest{},
	"list-request":        schemas.ListRequest{},
	"stats-request":       schemas.StatsRequest{},
	"show-request":        schemas.ShowRequest{},
	"export-request":      schemas.ExportRequest{},
	"import-request":      schemas.ImportRequest{},
	"delete-bulk-request": schemas.DeleteBulkRequest{},
	"tool-result":         schemas.ToolResult{},
	"transcript-entry":    schemas.TranscriptEntry{},
}

// ID is the $id a schema named name is published under.
func ID(name string) string { return "https://clawmem.dev/schemas/v1/" + name + ".json" }

// Schema reflects v's JSON Schema: every type inline (no $defs), so each
// schema stands alone.
func Schema(v any) *jsonschema.Schema {
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}
	return r.Reflect(v)
}
