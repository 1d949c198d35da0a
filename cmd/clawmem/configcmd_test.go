package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/clawmem/clawmem/config"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigCheck(t *testing.T) {
	t.Setenv(config.EnvConfig, "")
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "config", "check", "--data-dir", dir)
	if code != 0 || out != "ok: no config file: defaults only\n" {
		t.Fatalf("no file: %d %q %q", code, out, errOut)
	}

	t.Setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
	doc := writeFile(t, "openclaw.json", `{
  // OpenClaw's openclaw.json is JSON5
  "plugins": {"entries": {"memory-lancedb": {"enabled": true, "config": {
    "embedding": {"apiKey": "${OPENAI_API_KEY}", "model": "text-embedding-3-small"},
    "autoRecall": true, "autoCapture": true, "captureMaxChars": 500}}}}
}`)
	code, out, _ = runCLI(t, "config", "check", "--data-dir", dir, "--config", doc)
	if code != 0 || !strings.HasPrefix(out, "ok: "+doc+" (json5), plugins.entries.memory-lancedb.config\n") ||
		!strings.Contains(out, "warning: autoRecall is accepted but ignored") {
		t.Fatalf("OpenClaw document: %d\n%s", code, out)
	}

	bad := writeFile(t, "config.yaml", "retrieval:\n  minScroe: 0.2\n  hardMinScore: 2\nembedding:\n  apiKey: ${CLAWMEM_TEST_UNSET_KEY}\n")
	code, out, _ = runCLI(t, "config", "check", "--data-dir", dir, "--config", bad)
	if code != 1 || !strings.Contains(out, `error: unknown key "retrieval.minScroe" — did you mean "retrieval.minScore"?`) ||
		!strings.Contains(out, "error: embedding.apiKey: environment variable CLAWMEM_TEST_UNSET_KEY is not set") {
		t.Fatalf("bad config: %d\n%s", code, out)
	}

	code, out, _ = runCLI(t, "config", "check", "--data-dir", dir, "--config", bad, "--json")
	var rep struct {
		OK       bool
		File     string
		Errors   []string
		Warnings []string
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || rep.OK || rep.File != bad || len(rep.Errors) != 2 || rep.Warnings == nil {
		t.Fatalf("--json: %d %v\n%s", code, err, out)
	}
	// Range errors come once the keys and values are sound.
	bad = writeFile(t, "config.json", `{"retrieval":{"hardMinScore":2}}`)
	code, out, _ = runCLI(t, "config", "check", "--data-dir", dir, "--config", bad, "--json")
	if json.Unmarshal([]byte(out), &rep) != nil || code != 1 || len(rep.Errors) != 1 || rep.Errors[0] != "retrieval.hardMinScore is 2: allowed range 0..1" {
		t.Fatalf("range: %d\n%s", code, out)
	}

	code, _, errOut = runCLI(t, "config", "check", "--config", filepath.Join(dir, "missing.json"))
	if code != 1 {
		t.Fatalf("missing file: exit %d %s", code, errOut)
	}
}

func TestConfigShow(t *testing.T) {
	t.Setenv(config.EnvConfig, "")
	t.Setenv("JINA_API_KEY", "")
	dir := t.TempDir()
	cfg := writeFile(t, "config.json5", `{
  embedding: {apiKey: "${JINA_API_KEY}", model: "jina-embeddings-v5-text-small", baseURL: "https://api.jina.ai/v1"},
  retrieval: {rerankApiKey: "${JINA_API_KEY}", minScore: 0.4},
  ingest: {token: "plain-secret-token-0123456789"},
}`)
	show := func(args ...string) (int, map[string]any, string) {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"config", "show", "--data-dir", dir, "--config", cfg}, args...)...)
		var m map[string]any
		if code == 0 {
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("show %v: %v\n%s", args, err, out)
			}
		}
		return code, m, errOut
	}
	key := func(m map[string]any, block, k string) any { return m[block].(map[string]any)[k] }

	// Unset variables are shown as written.
	code, m, errOut := show()
	if code != 0 {
		t.Fatalf("show: %s", errOut)
	}
	for _, c := range []struct {
		block, key string
		want       any
	}{
		{"embedding", "apiKey", "${JINA_API_KEY}"},
		{"retrieval", "rerankApiKey", "${JINA_API_KEY}"},
		{"retrieval", "minScore", 0.4},
		{"retrieval", "hardMinScore", 0.0}, // clawmem's default (retrieve.DefaultConfig)
		{"retrieval", "autoRecallMinScore", 0.65},
		{"retrieval", "autoRecallMinMargin", 0.18},
		{"ingest", "token", "plain-****6789"},
		{"jobs", "backup", map[string]any{"schedule": "@daily", "keep": 7.0, "dir": filepath.Join(dir, "backups"), "withVectors": false}},
	} {
		if got := key(m, c.block, c.key); !reflect.DeepEqual(got, c.want) {
			t.Errorf("show: %s.%s = %#v, want %#v", c.block, c.key, got, c.want)
		}
	}
	if m["dataDir"] != dir || m["captureMaxChars"] != 500.0 {
		t.Errorf("show: dataDir %v, captureMaxChars %v", m["dataDir"], m["captureMaxChars"])
	}

	if code, _, errOut := show("--resolved"); code != 1 || !strings.Contains(errOut, "embedding.apiKey: environment variable JINA_API_KEY is not set") {
		t.Fatalf("--resolved with the variable unset: %d %s", code, errOut)
	}
	t.Setenv("JINA_API_KEY", "jina_0123456789abcdefghijWXYZ")
	code, m, errOut = show("--resolved")
	if code != 0 || key(m, "embedding", "apiKey") != "jina_****WXYZ" || key(m, "retrieval", "rerankApiKey") != "jina_****WXYZ" {
		t.Fatalf("--resolved: %d %s %v", code, errOut, m)
	}
	_, written, _ := show()
	if key(written, "embedding", "apiKey") != "${JINA_API_KEY}" {
		t.Fatalf("show without --resolved resolved the key: %v", key(written, "embedding", "apiKey"))
	}

	code, out, _ := runCLI(t, "config", "show", "--data-dir", dir, "--config", cfg, "--resolved", "--format", "yaml")
	var y map[string]any
	if err := yaml.Unmarshal([]byte(out), &y); code != 0 || err != nil || strings.Contains(out, "0123456789") {
		t.Fatalf("--format yaml: %d %v\n%s", code, err, out)
	}
	yj, _ := json.Marshal(y)
	var fromYAML map[string]any
	if err := json.Unmarshal(yj, &fromYAML); err != nil || !reflect.DeepEqual(fromYAML, m) {
		t.Fatalf("YAML and JSON output differ:\n%v\n%v", fromYAML, m)
	}
	if code, _, _ := runCLI(t, "config", "show", "--data-dir", dir, "--format", "toml"); code != 1 {
		t.Fatal("--format toml accepted")
	}
}
