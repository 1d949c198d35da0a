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

	"github.com/clawmem/clawmem/schemas/schemagen"
)

// generate renders every schema, keyed by file name.
func generate() (map[string][]byte, error) {
	out := make(map[string][]byte, len(schemagen.Types))
	for name, v := range schemagen.Types {
		s := schemagen.Schema(v)
		s.ID = jsonschema.ID(schemagen.ID(name))
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
