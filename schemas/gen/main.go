// Command gen writes the JSON Schema of every clawmem message body into
// schemas/jsonschema, for publishers written in other languages. Run it
// with `go generate ./schemas/...`; a test fails when the files are stale.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/invopop/jsonschema"

	"github.com/clawmem/clawmem/schemas"
)

// types maps each schema file to the Go type it describes.
var types = map[string]any{
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

// generate renders every schema, keyed by file name.
func generate() (map[string][]byte, error) {
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}
	out := make(map[string][]byte, len(types))
	for name, v := range types {
		s := r.Reflect(v)
		s.ID = jsonschema.ID("https://clawmem.dev/schemas/v1/" + name + ".json")
		s.Version = "https://json-schema.org/draft/2020-12/schema"
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(s); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name+".json"] = buf.Bytes()
	}
	return out, nil
}

func main() {
	dir := "jsonschema"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	files, err := generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
