package deploy_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

var (
	secretName = regexp.MustCompile(`(?i)(token|passw(or)?d|secret|api[_-]?key|credential|private[_-]?key)`)
	// Values that look like real keys, wherever they appear.
	secretValue = regexp.MustCompile(`sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|-----BEGIN [A-Z ]*PRIVATE KEY-----|AIza[0-9A-Za-z_-]{30,}`)
	// URLs with a literal password: scheme://user:password@host.
	urlPassword = regexp.MustCompile(`[a-z]+://[^/\s:@"']+:([^/\s@"']+)@`)
)

// referenceOnly reports whether v holds no literal secret: empty, an
// environment reference (${VAR}, ${VAR:?msg}, $VAR) or a file path.
func referenceOnly(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") ||
		regexp.MustCompile(`^\$[A-Za-z_][A-Za-z0-9_]*$`).MatchString(v) || strings.HasPrefix(v, "/")
}

func checkTextSecrets(t *testing.T, where, text string) {
	t.Helper()
	if m := secretValue.FindString(text); m != "" {
		t.Errorf("%s: contains what looks like a key: %.12s...", where, m)
	}
	for _, m := range urlPassword.FindAllStringSubmatch(text, -1) {
		if !strings.HasPrefix(m[1], "$") && !strings.HasPrefix(m[1], "<") {
			t.Errorf("%s: URL with a literal password: %s", where, m[0])
		}
	}
}

// checkYAMLSecrets walks a YAML tree: a key named like a secret must hold a
// reference, and so must an env entry {name: <secret-like>, value: ...}.
func checkYAMLSecrets(t *testing.T, where string, n *yaml.Node) {
	t.Helper()
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			checkYAMLSecrets(t, where, c)
		}
	case yaml.MappingNode:
		var name, value *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.ScalarNode {
				if secretName.MatchString(k.Value) && !referenceOnly(v.Value) {
					t.Errorf("%s:%d: %s has a literal value", where, v.Line, k.Value)
				}
				switch k.Value {
				case "name":
					name = v
				case "value":
					value = v
				}
				checkTextSecrets(t, fmt.Sprintf("%s:%d", where, v.Line), v.Value)
			}
			checkYAMLSecrets(t, where, v)
		}
		if name != nil && value != nil && secretName.MatchString(name.Value) && !referenceOnly(value.Value) {
			t.Errorf("%s:%d: env %s has a literal value; use valueFrom.secretKeyRef", where, value.Line, name.Value)
		}
	}
}

func TestNoSecretsInConfigs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("compose", "*"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, repoPath("docker-compose.yml"), repoPath(".dockerignore"), "README.md")
	for _, f := range files {
		checkTextSecrets(t, f, readFile(t, f))
	}
}
