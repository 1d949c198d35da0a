// Package deploy_test checks the deployment files: docker-compose.yml, the
// Dockerfile, the per-role configs, the NATS server configs (including a live
// server enforcing accounts.conf), the systemd unit and the Kubernetes
// manifests.
package deploy_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Tests run in deploy/; the repository root is one up.
const root = ".."

// The names the deployment files must agree on.
const (
	natsService   = "nats"
	natsPort      = "4222"
	ingestPort    = "7433"
	dataDir       = "/data"
	serviceUser   = "clawmem"
	serviceAcct   = "CLAWMEM"
	runtimeUID    = "10001"
	ingestTokenEV = "CLAWMEM_INGEST_TOKEN"
)

// roles a clawmem service may run (`clawmem worker <role>`).
var roles = []string{"store", "capture", "ingest", "query"}

// knownConfigKeys are the config keys deployment files may set, with the
// JSON type each must have.
var knownConfigKeys = map[string]string{
	"nats.url":              "string",
	"nats.credentials":      "string",
	"nats.replicas":         "number",
	"nats.partitions":       "number",
	"ingest.addr":           "string",
	"ingest.token":          "string",
	"dbPath":                "string",
	"embedding.provider":    "string",
	"embedding.apiKey":      "string",
	"embedding.model":       "string",
	"embedding.baseURL":     "string",
	"embedding.dimensions":  "number",
	"embedding.taskQuery":   "string",
	"embedding.taskPassage": "string",
	"embedding.normalized":  "bool",
}

func repoPath(elem ...string) string { return filepath.Join(append([]string{root}, elem...)...) }

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
