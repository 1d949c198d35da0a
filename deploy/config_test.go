package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// jsonConfig is a config file flattened to dotted keys.
type jsonConfig map[string]any

func (c jsonConfig) str(key string) (string, bool) {
	s, ok := c[key].(string)
	return s, ok
}

// sub returns the keys under prefix ("embedding"), for comparing blocks.
func (c jsonConfig) sub(prefix string) map[string]any {
	out := map[string]any{}
	for k, v := range c {
		if strings.HasPrefix(k, prefix+".") {
			out[k] = v
		}
	}
	return out
}

var envRef = regexp.MustCompile(`\$\{([^}]*)\}`)

// envRefName returns NAME when s is exactly "${NAME}".
func envRefName(s string) string {
	m := regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`).FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1]
}

func parseConfig(t *testing.T, where string, raw []byte) jsonConfig {
	t.Helper()
	var tree map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&tree); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("%s: trailing data after the JSON object", where)
	}
	flat := jsonConfig{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			if sub, ok := v.(map[string]any); ok {
				walk(key, sub)
				continue
			}
			flat[key] = v
		}
	}
	walk("", tree)
	for k, v := range flat {
		want, ok := knownConfigKeys[k]
		if !ok {
			t.Errorf("%s: unknown config key %q (known: %v)", where, k, mapKeys(knownConfigKeys))
			continue
		}
		var have string
		switch v.(type) {
		case string:
			have = "string"
		case float64:
			have = "number"
		case bool:
			have = "bool"
		default:
			have = fmt.Sprintf("%T", v)
		}
		if have != want {
			t.Errorf("%s: %s is a %s, want a %s", where, k, have, want)
		}
		if s, ok := v.(string); ok {
			for _, m := range envRef.FindAllStringSubmatch(s, -1) {
				if !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(m[1]) {
					t.Errorf("%s: %s: malformed reference %q", where, k, m[0])
				}
			}
			if strings.Count(s, "${") != len(envRef.FindAllString(s, -1)) {
				t.Errorf("%s: %s: unterminated ${ in %q", where, k, s)
			}
		}
	}
	// Listening beyond loopback requires a token, which must not be written here.
	if addr, ok := flat.str("ingest.addr"); ok {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			t.Errorf("%s: ingest.addr %q: %v", where, addr, err)
		}
		ip := net.ParseIP(host)
		if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
			if tok, _ := flat.str("ingest.token"); tok == "" {
				t.Errorf("%s: ingest.addr %q is not loopback but ingest.token is empty", where, addr)
			}
		}
	}
	for _, k := range []string{"ingest.token", "embedding.apiKey"} {
		if v, ok := flat.str(k); ok && v != "" && !envRef.MatchString(v) {
			t.Errorf("%s: %s is written literally; use \"${ENV_VAR}\"", where, k)
		}
	}
	if u, ok := flat.str("nats.url"); ok {
		for _, one := range strings.Split(u, ",") {
			if p, err := parseNATSURL(one); err != nil {
				t.Errorf("%s: nats.url %q: %v", where, one, err)
			} else if p.Scheme != "nats" && p.Scheme != "tls" {
				t.Errorf("%s: nats.url %q: want nats:// URLs", where, one)
			}
		}
	}
	return flat
}

func loadConfigFile(t *testing.T, p string) jsonConfig {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return parseConfig(t, p, raw)
}

func TestComposeConfigs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("compose", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfgs := map[string]jsonConfig{}
	for _, f := range files {
		cfgs[filepath.Base(f)] = loadConfigFile(t, f)
	}
	for _, want := range []string{"store.json", "capture.json", "ingest.json"} {
		if _, ok := cfgs[want]; !ok {
			t.Errorf("deploy/compose/%s is missing", want)
		}
	}
	checkSameEmbedding(t, "deploy/compose", cfgs)
}

// checkSameEmbedding: capture embeds memories and the store embeds queries,
// so their embedding blocks must match.
func checkSameEmbedding(t *testing.T, where string, cfgs map[string]jsonConfig) {
	t.Helper()
	s, c := cfgs["store.json"], cfgs["capture.json"]
	if s == nil || c == nil {
		return
	}
	if a, b := fmt.Sprint(s.sub("embedding")), fmt.Sprint(c.sub("embedding")); a != b {
		t.Errorf("%s: store.json embedding %s differs from capture.json embedding %s", where, a, b)
	}
}
