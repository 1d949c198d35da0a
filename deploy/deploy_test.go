// Package deploy_test checks the deployment files: docker-compose.yml, the
// Dockerfile, the per-role configs, the NATS server configs (including a live
// server enforcing accounts.conf), the systemd unit and the Kubernetes
// manifests.
package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"gopkg.in/yaml.v3"

	"github.com/clawmem/clawmem/internal/natsconf"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/schemas"
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

// ---------------------------------------------------------------- compose

type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Profiles    []string          `yaml:"profiles"`
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	Tmpfs       []string          `yaml:"tmpfs"`
	ReadOnly    bool              `yaml:"read_only"`
	User        string            `yaml:"user"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	Deploy struct {
		Replicas *int `yaml:"replicas"`
	} `yaml:"deploy"`
}

// mount is one short-syntax volume: source:target[:mode].
type mount struct{ source, target, mode string }

func parseMount(s string) mount {
	parts := strings.Split(s, ":")
	m := mount{source: parts[0]}
	if len(parts) > 1 {
		m.target = parts[1]
	}
	if len(parts) > 2 {
		m.mode = parts[2]
	}
	return m
}

func (m mount) named() bool {
	return m.source != "" && !strings.HasPrefix(m.source, ".") && !strings.HasPrefix(m.source, "/") && !strings.HasPrefix(m.source, "~")
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	var c composeFile
	if err := yaml.Unmarshal([]byte(readFile(t, repoPath("docker-compose.yml"))), &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

// flagValue returns the value after flag in args.
func flagValue(args []string, flag string) (string, bool) {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
	}
	return "", false
}

// checkWorkerArgs checks `worker <role> --nats-url nats://<natsService>:4222 ...`
// and returns the role.
func checkWorkerArgs(t *testing.T, where string, args []string) string {
	t.Helper()
	if len(args) < 2 || args[0] != "worker" {
		t.Errorf("%s: command %q: want `worker <role> ...`", where, args)
		return ""
	}
	role := args[1]
	if !slices.Contains(roles, role) {
		t.Errorf("%s: role %q is not one of %v", where, role, roles)
	}
	raw, ok := flagValue(args, "--nats-url")
	if !ok {
		t.Errorf("%s: command %q has no --nats-url", where, args)
		return role
	}
	for _, one := range strings.Split(raw, ",") {
		u, err := parseNATSURL(one)
		if err != nil {
			t.Errorf("%s: --nats-url %q: %v", where, one, err)
			continue
		}
		if u.Scheme != "nats" || u.Hostname() != natsService || u.Port() != natsPort {
			t.Errorf("%s: --nats-url %q: want nats://%s:%s", where, one, natsService, natsPort)
		}
	}
	return role
}

// parseNATSURL parses a NATS URL whose password may be an environment
// reference (clawmem expands "${VAR}" before connecting; compose writes it
// "$${VAR}"). A literal password is an error.
func parseNATSURL(s string) (*url.URL, error) {
	u, err := url.Parse(envRefAny.ReplaceAllString(s, "ref"))
	if err != nil {
		return nil, err
	}
	if u.User != nil {
		if pw, set := u.User.Password(); set && pw != "ref" {
			return nil, errors.New("literal password in the URL; use ${ENV_VAR}")
		}
	}
	return u, nil
}

// envRefAny matches ${VAR}, $${VAR} and $VAR.
var envRefAny = regexp.MustCompile(`\$?\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)`)

func TestComposeServices(t *testing.T) {
	c := loadCompose(t)
	for _, name := range []string{natsService, "clawmem-store", "clawmem-capture", "clawmem-ingest"} {
		if _, ok := c.Services[name]; !ok {
			t.Fatalf("docker-compose.yml: no service %q (have %v)", name, mapKeys(c.Services))
		}
	}

	// Every named volume a service mounts is declared.
	for name, s := range c.Services {
		for _, v := range s.Volumes {
			m := parseMount(v)
			if m.target == "" {
				t.Errorf("%s: volume %q has no target", name, v)
			}
			if m.named() {
				if _, ok := c.Volumes[m.source]; !ok {
					t.Errorf("%s: named volume %q is not declared under volumes:", name, m.source)
				}
			} else if _, err := os.Stat(repoPath(m.source)); err != nil {
				t.Errorf("%s: bind mount %q: %v", name, v, err)
			}
		}
	}

	t.Run("nats", func(t *testing.T) {
		s := c.Services[natsService]
		if !strings.HasPrefix(s.Image, "nats:") {
			t.Errorf("image %q: want an official nats image", s.Image)
		}
		cmd := strings.Join(s.Command, " ")
		if !strings.Contains(cmd, "-js") || !strings.Contains(cmd, "-sd "+dataDir) {
			t.Errorf("command %q: want JetStream on (-js) with its store in %s (-sd %s)", cmd, dataDir, dataDir)
		}
		conf, ok := flagValue(s.Command, "--config")
		if !ok {
			conf, ok = flagValue(s.Command, "-c")
		}
		if !ok {
			t.Fatalf("command %q: no --config", cmd)
		}
		var dataVol, confMounted bool
		for _, v := range s.Volumes {
			m := parseMount(v)
			if m.target == dataDir && m.named() {
				dataVol = true
			}
			if rel, ok := strings.CutPrefix(conf, m.target+"/"); ok && !m.named() {
				confMounted = true
				if m.mode != "ro" {
					t.Errorf("config mount %q: want read-only", v)
				}
				host := path.Join(m.source, rel)
				if host != path.Clean("./deploy/nats/nats-server.conf") {
					t.Errorf("--config %s is %s on the host, want ./deploy/nats/nats-server.conf", conf, host)
				}
				if _, err := os.Stat(repoPath(host)); err != nil {
					t.Error(err)
				}
			}
		}
		if !dataVol {
			t.Errorf("no named volume at %s for JetStream", dataDir)
		}
		if !confMounted {
			t.Errorf("--config %s is not inside a bind mount", conf)
		}
		if s.Healthcheck == nil || len(s.Healthcheck.Test) == 0 {
			t.Error("no healthcheck")
		}
	})

	for _, name := range []string{"clawmem-store", "clawmem-capture", "clawmem-ingest"} {
		t.Run(name, func(t *testing.T) {
			s := c.Services[name]
			role := checkWorkerArgs(t, name, s.Command)
			if want := strings.TrimPrefix(name, "clawmem-"); role != want {
				t.Errorf("runs role %q, want %q", role, want)
			}
			if s.Build == nil && s.Image == "" {
				t.Error("neither build nor image")
			}
			if s.User == "0" || s.User == "root" {
				t.Error("runs as root")
			}
			if d, ok := s.DependsOn[natsService]; !ok || d.Condition != "service_healthy" {
				t.Errorf("depends_on: want %s with condition service_healthy", natsService)
			}
			cfg := composeConfig(t, name, s)
			natsURL, _ := flagValue(s.Command, "--nats-url")
			if u, ok := cfg.str("nats.url"); ok {
				a, errA := parseNATSURL(u)
				b, errB := parseNATSURL(natsURL)
				if errA != nil || errB != nil || a.Host != b.Host {
					t.Errorf("config nats.url %q and --nats-url %q name different servers", u, natsURL)
				}
			}
			var dataMount *mount
			for _, v := range s.Volumes {
				if m := parseMount(v); m.target == dataDir {
					dataMount = &m
				}
			}
			switch role {
			case "store":
				if dataMount == nil || dataMount.source != "clawmem-data" {
					t.Errorf("want the named volume clawmem-data at %s, have %v", dataDir, s.Volumes)
				}
				if s.Deploy.Replicas != nil && *s.Deploy.Replicas != 1 {
					t.Errorf("deploy.replicas %d: run exactly one store worker per store", *s.Deploy.Replicas)
				}
			case "ingest":
				checkComposeIngest(t, s, cfg)
			}
		})
	}
}

// clusterNodes are the compose cluster profile's NATS nodes.
var clusterNodes = []string{"nats-1", "nats-2", "nats-3"}

// TestComposeClusterProfile checks the "cluster" profile: three NATS nodes
// running `clawmem nats config --cluster 3 --open`'s files, two writers and
// two query replicas each on a volume of its own, capture, and ingest
// depending on all of it; every clawmem service reaches all three nodes
// and keeps three copies of every stream.
func TestComposeClusterProfile(t *testing.T) {
	c := loadCompose(t)
	gen, err := natsconf.Generate(natsconf.Options{Cluster: 3, Open: true})
	if err != nil {
		t.Fatal(err)
	}
	inProfile := map[string]bool{}
	for name, s := range c.Services {
		if slices.Contains(s.Profiles, "cluster") {
			inProfile[name] = true
		} else if strings.HasPrefix(name, "cluster-") || slices.Contains(clusterNodes, name) {
			t.Errorf("%s is not in the cluster profile", name)
		}
	}
	for i, name := range clusterNodes {
		s, ok := c.Services[name]
		if !ok || !inProfile[name] {
			t.Fatalf("no service %s in the cluster profile", name)
		}
		conf, _ := flagValue(s.Command, "--config")
		if want := fmt.Sprintf("/etc/nats/nats-%d.conf", i+1); conf != want {
			t.Errorf("%s: --config %q, want %s", name, conf, want)
		}
		if len(s.Ports) > 0 {
			t.Errorf("%s publishes %v: the open nodes must stay on the compose network", name, s.Ports)
		}
		var confDir, data string
		for _, v := range s.Volumes {
			m := parseMount(v)
			switch {
			case m.target == "/etc/nats" && m.mode == "ro":
				confDir = m.source
			case m.target == dataDir && m.named():
				data = m.source
			}
		}
		if confDir != "./deploy/nats/cluster" || data != name+"-data" {
			t.Errorf("%s: volumes %v: want ./deploy/nats/cluster read-only at /etc/nats and %s-data at %s", name, s.Volumes, name, dataDir)
		}
		if got := readFile(t, filepath.Join("nats", "cluster", gen[i].Name)); got != gen[i].Text {
			t.Errorf("deploy/nats/cluster/%s differs from `clawmem nats config --cluster 3 --open`: regenerate it", gen[i].Name)
		}
	}
	wantRoles := map[string]string{"cluster-writer-1": "store", "cluster-writer-2": "store", "cluster-query-1": "query",
		"cluster-query-2": "query", "cluster-capture": "capture", "cluster-ingest": "ingest"}
	dataVolumes := map[string]string{}
	for name, role := range wantRoles {
		s, ok := c.Services[name]
		if !ok || !inProfile[name] {
			t.Errorf("no service %s in the cluster profile", name)
			continue
		}
		if len(s.Command) < 2 || s.Command[0] != "worker" || s.Command[1] != role {
			t.Errorf("%s: command %v, want `worker %s`", name, s.Command, role)
		}
		urls, _ := flagValue(s.Command, "--nats-url")
		cfg := composeConfig(t, name, s)
		cfgURLs, _ := cfg.str("nats.url")
		for _, u := range []string{urls, cfgURLs} {
			var hosts []string
			for _, one := range strings.Split(u, ",") {
				if pu, err := parseNATSURL(one); err == nil {
					hosts = append(hosts, pu.Hostname())
				}
			}
			slices.Sort(hosts)
			if !slices.Equal(hosts, clusterNodes) {
				t.Errorf("%s: NATS URL %q: want all of %v", name, u, clusterNodes)
			}
		}
		if r, _ := cfg["nats.replicas"].(float64); r != 3 {
			t.Errorf("%s: nats.replicas %v, want 3 on a 3-node cluster", name, cfg["nats.replicas"])
		}
		for _, node := range clusterNodes {
			if d, ok := s.DependsOn[node]; !ok || d.Condition != "service_healthy" {
				t.Errorf("%s: want depends_on %s healthy", name, node)
			}
		}
		for _, v := range s.Volumes {
			if m := parseMount(v); m.target == dataDir && m.named() {
				if other, dup := dataVolumes[m.source]; dup {
					t.Errorf("%s and %s share the volume %s: every writer and replica needs a store of its own", name, other, m.source)
				}
				dataVolumes[m.source] = name
			}
		}
		if (role == "store" || role == "query") && !slices.Contains(slices.Collect(maps.Values(dataVolumes)), name) {
			t.Errorf("%s: no named volume at %s for its store", name, dataDir)
		}
	}
	ingest := c.Services["cluster-ingest"]
	for name := range wantRoles {
		if _, ok := ingest.DependsOn[name]; name != "cluster-ingest" && !ok {
			t.Errorf("cluster-ingest does not depend on %s: `up cluster-ingest` would not start it", name)
		}
	}
	if !slices.Contains(ingest.Ports, "7434:7433") {
		t.Errorf("cluster-ingest ports %v: want 7434:7433 (7433 is the single-node stack's)", ingest.Ports)
	}
}

func checkComposeIngest(t *testing.T, s composeService, cfg jsonConfig) {
	t.Helper()
	addr, _ := cfg.str("ingest.addr")
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("ingest.addr %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
		t.Errorf("ingest.addr %q: want 0.0.0.0 so the published port reaches it", addr)
	}
	if port != ingestPort {
		t.Errorf("ingest.addr %q: want port %s", addr, ingestPort)
	}
	token, _ := cfg.str("ingest.token")
	ev := envRefName(token)
	if ev == "" {
		t.Fatalf("ingest.token %q: want a ${VAR} reference to the environment", token)
	}
	v, ok := s.Environment[ev]
	if !ok {
		t.Fatalf("ingest.token reads $%s but the service's environment does not set it", ev)
	}
	if !strings.HasPrefix(v, "${"+ev) {
		t.Errorf("environment %s=%q: want it interpolated from the host (${%s...}), not written here", ev, v, ev)
	}
	published := false
	for _, p := range s.Ports {
		parts := strings.Split(p, ":")
		if parts[len(parts)-1] == ingestPort {
			published = true
		}
	}
	if !published {
		t.Errorf("ports %v: container port %s is not published", s.Ports, ingestPort)
	}
	if s.Healthcheck == nil || !strings.Contains(strings.Join(s.Healthcheck.Test, " "), "/healthz") {
		t.Error("want a healthcheck on GET /healthz")
	}
}

// composeConfig loads the JSON config a compose service's --config (or
// CLAWMEM_CONFIG) points at through its read-only bind mount.
func composeConfig(t *testing.T, name string, s composeService) jsonConfig {
	t.Helper()
	p, ok := flagValue(s.Command, "--config")
	if !ok {
		p, ok = s.Environment["CLAWMEM_CONFIG"]
	}
	if !ok {
		t.Fatalf("%s: no --config and no CLAWMEM_CONFIG", name)
	}
	for _, v := range s.Volumes {
		m := parseMount(v)
		if m.target != p {
			continue
		}
		if !strings.HasPrefix(m.source, "./deploy/compose/") || !strings.HasSuffix(m.source, ".json") {
			t.Errorf("%s: config %q: want a file under ./deploy/compose", name, m.source)
		}
		if m.mode != "ro" {
			t.Errorf("%s: config mount %q: want read-only", name, v)
		}
		return loadConfigFile(t, repoPath(m.source))
	}
	t.Fatalf("%s: config %s is not mounted", name, p)
	return nil
}

func TestComposeNoSecrets(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(readFile(t, repoPath("docker-compose.yml"))), &doc); err != nil {
		t.Fatal(err)
	}
	checkYAMLSecrets(t, "docker-compose.yml", &doc)
}

// TestComposeConfigCLI runs `docker compose config -q` when the compose
// plugin is installed. It needs no daemon; without the plugin it skips.
func TestComposeConfigCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("docker CLI not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, docker, "compose", "version").CombinedOutput(); err != nil {
		t.Skipf("docker compose not available: %s", bytes.TrimSpace(out))
	}
	cmd := exec.CommandContext(ctx, docker, "compose", "-f", repoPath("docker-compose.yml"), "config", "-q")
	cmd.Env = append(os.Environ(), ingestTokenEV+"=test-token-not-a-secret")
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := string(out)
		if strings.Contains(msg, "Cannot connect to the Docker daemon") || strings.Contains(msg, "docker daemon") {
			t.Skipf("docker compose config needs a daemon here: %s", msg)
		}
		t.Fatalf("docker compose config: %v\n%s", err, msg)
	}
}

// ---------------------------------------------------------------- Dockerfile

func TestDockerfile(t *testing.T) {
	text := readFile(t, repoPath("Dockerfile"))
	var froms []string
	var lastStage []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(strings.ToUpper(line), "FROM ") {
			froms = append(froms, line)
			lastStage = nil
		}
		lastStage = append(lastStage, line)
	}
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, have %d FROM lines", len(froms))
	}
	if !strings.HasPrefix(froms[0], "FROM golang:1.26") {
		t.Errorf("build stage %q: want golang:1.26", froms[0])
	}
	if strings.Contains(froms[len(froms)-1], "golang") {
		t.Errorf("runtime stage %q: want a small base, not the Go toolchain", froms[len(froms)-1])
	}
	for _, want := range []string{"CGO_ENABLED=0", "-o /clawmem ./cmd/clawmem"} {
		if !strings.Contains(text, want) {
			t.Errorf("build does not contain %q", want)
		}
	}
	final := strings.Join(lastStage, "\n")
	for _, want := range []string{
		"VOLUME " + dataDir, "ENV CLAWMEM_DATA_DIR=" + dataDir, `ENTRYPOINT ["/clawmem"]`, "COPY --from=",
	} {
		if !strings.Contains(final, want) {
			t.Errorf("runtime stage lacks %q", want)
		}
	}
	user := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindStringSubmatch(final)
	if user == nil {
		t.Fatal("runtime stage has no USER: it would run as root")
	}
	if uid, _, _ := strings.Cut(user[1], ":"); uid != runtimeUID {
		t.Errorf("USER %s: want %s (the UID the k8s manifests run as)", user[1], runtimeUID)
	}
	checkTextSecrets(t, "Dockerfile", text)
}

func TestDockerignore(t *testing.T) {
	var patterns []string
	for _, line := range strings.Split(readFile(t, repoPath(".dockerignore")), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, strings.TrimPrefix(line, "/"))
		}
	}
	if !slices.Contains(patterns, ".env") {
		t.Error(".env (compose's secrets file) is not excluded from the build context")
	}
	// The build needs these.
	for _, need := range []string{"go.mod", "go.sum", "cmd/clawmem/main.go", "schemas/subjects.go", "engine", "internal"} {
		for _, p := range patterns {
			if strings.HasPrefix(p, "!") {
				continue
			}
			p = strings.TrimPrefix(p, "**/")
			if ok, _ := path.Match(p, need); ok || strings.HasPrefix(need, strings.TrimSuffix(p, "/")+"/") {
				t.Errorf(".dockerignore pattern %q excludes %s, which the build needs", p, need)
			}
		}
	}
}

// ---------------------------------------------------------------- JSON configs

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

// ---------------------------------------------------------------- NATS configs

// agentAccount is the account accounts.conf gives an agent.
func agentAccount(agent string) string {
	return "AGENT_" + strings.ToUpper(strings.ReplaceAll(agent, "-", "_"))
}

// agentSubjects are the only subjects an agent may publish to.
func agentSubjects(agent string) []string {
	return []string{"clawmem.hooks.v1." + agent + ".>", "clawmem.v1." + agent + ".>"}
}

// subjectAgent returns the agent a per-agent subject pattern belongs to.
func subjectAgent(subj string) (string, bool) {
	tok := strings.Split(subj, ".")
	switch {
	case len(tok) == 5 && tok[0] == "clawmem" && tok[1] == "hooks" && tok[2] == "v1" && tok[4] == ">":
		return tok[3], true
	case len(tok) == 4 && tok[0] == "clawmem" && tok[1] == "v1" && tok[3] == ">":
		return tok[2], true
	}
	return "", false
}

// natsEnv sets what the NATS configs read from the environment.
func natsEnv(t *testing.T) map[string]string {
	env := map[string]string{
		"CLAWMEM_NATS_PASSWORD":              "svc-pw",
		"CLAWMEM_OPS_PASSWORD":               "ops-pw",
		"CLAWMEM_AGENT_MAIN_PASSWORD":        "main-pw",
		"CLAWMEM_AGENT_DISCORD_BOT_PASSWORD": "bot-pw",
		"NATS_SERVER_NAME":                   "nats-1",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	return env
}

func TestNATSConfText(t *testing.T) {
	for _, f := range []string{"nats-server.conf", "accounts.conf", "cluster.conf"} {
		text := readFile(t, filepath.Join("nats", f))
		checkTextSecrets(t, f, text)
		for _, m := range regexp.MustCompile(`(?m)^[^#\n]*\bpassword\s*[:=]\s*(\S+)`).FindAllStringSubmatch(text, -1) {
			if !strings.HasPrefix(m[1], "$") {
				t.Errorf("%s: password %s is written literally; use $ENV_VAR", f, m[1])
			}
		}
	}
	srv := readFile(t, filepath.Join("nats", "nats-server.conf"))
	for _, want := range []string{"jetstream", "max_payload: 8MB", "http: 0.0.0.0:8222", "include ./accounts.conf"} {
		if !strings.Contains(srv, want) {
			t.Errorf("nats-server.conf lacks %q", want)
		}
	}

	acc := readFile(t, filepath.Join("nats", "accounts.conf"))
	for _, want := range []string{
		`"clawmem.>"`, `"$JS.API.>"`, `"$SRV.>"`, `"_INBOX.>"`, "allow_responses: true",
		`"clawmem.hooks.v1.main.>"`, `"clawmem.v1.main.>"`,
		`"clawmem.hooks.v1.discord-bot.>"`, `"clawmem.v1.discord-bot.>"`,
	} {
		if !strings.Contains(acc, want) {
			t.Errorf("accounts.conf lacks %s", want)
		}
	}

	// Each AGENT_<ID> block names only its own agent's subjects.
	starts := regexp.MustCompile(`(?m)^\s*(AGENT_[A-Z0-9_]+)\s*\{`).FindAllStringSubmatchIndex(acc, -1)
	if len(starts) < 2 {
		t.Fatalf("accounts.conf: want at least two AGENT_<ID> accounts, have %d", len(starts))
	}
	quoted := regexp.MustCompile(`"(clawmem\.[^"]*)"`)
	for i, st := range starts {
		end := len(acc)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		block, acct := acc[st[0]:end], acc[st[2]:st[3]]
		user := regexp.MustCompile(`\buser:\s*([A-Za-z0-9_-]+)`).FindStringSubmatch(block)
		if user == nil {
			t.Errorf("%s: no user", acct)
			continue
		}
		agent := user[1]
		if agentAccount(agent) != acct {
			t.Errorf("user %s is in account %s, want %s", agent, acct, agentAccount(agent))
		}
		subs := quoted.FindAllStringSubmatch(block, -1)
		if len(subs) != 4 {
			t.Errorf("%s: want 2 publish allows and 2 imports, found %d clawmem subjects", acct, len(subs))
		}
		for _, m := range subs {
			if a, ok := subjectAgent(m[1]); !ok || a != agent {
				t.Errorf("%s (agent %s) names subject %q", acct, agent, m[1])
			}
		}
	}
	// Each export is visible only to the account of the agent it names.
	exports := regexp.MustCompile(`service:\s*"([^"]+)",\s*accounts:\s*\[([^\]]*)\]`).FindAllStringSubmatch(acc, -1)
	if len(exports) < 4 {
		t.Errorf("accounts.conf: want two exports per agent, have %d", len(exports))
	}
	for _, m := range exports {
		agent, ok := subjectAgent(m[1])
		if !ok {
			t.Errorf("export %q is not a per-agent subject", m[1])
			continue
		}
		if got := strings.TrimSpace(m[2]); got != agentAccount(agent) {
			t.Errorf("export %q is visible to [%s], want only %s", m[1], got, agentAccount(agent))
		}
	}
}

func TestNATSServerConf(t *testing.T) {
	opts, err := server.ProcessConfigFile(filepath.Join("nats", "nats-server.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !opts.JetStream || opts.StoreDir != dataDir {
		t.Errorf("jetstream %v store_dir %q: want JetStream on in %s", opts.JetStream, opts.StoreDir, dataDir)
	}
	if opts.MaxPayload != 8<<20 {
		t.Errorf("max_payload %d, want 8MB", opts.MaxPayload)
	}
	if opts.HTTPPort != 8222 {
		t.Errorf("monitoring port %d, want 8222 (the compose healthcheck uses it)", opts.HTTPPort)
	}
	if fmt.Sprint(opts.Port) != natsPort {
		t.Errorf("client port %d, want %s", opts.Port, natsPort)
	}

	// Enabling accounts as the file's comment says yields a valid config.
	natsEnv(t)
	dir := t.TempDir()
	for _, f := range []string{"nats-server.conf", "accounts.conf"} {
		text := readFile(t, filepath.Join("nats", f))
		if f == "nats-server.conf" {
			text = strings.Replace(text, "# include ./accounts.conf", "include ./accounts.conf", 1)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "nats-server.conf")
	opts, err = server.ProcessConfigFile(p)
	if err != nil {
		t.Fatalf("nats-server.conf with accounts enabled: %v", err)
	}
	if len(opts.Users) < 4 {
		t.Errorf("with accounts enabled: %d users, want the service, ops and agent users", len(opts.Users))
	}
}

func TestNATSClusterConf(t *testing.T) {
	natsEnv(t)
	opts, err := server.ProcessConfigFile(filepath.Join("nats", "cluster.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if opts.ServerName != "nats-1" {
		t.Errorf("server_name %q: want it from $NATS_SERVER_NAME", opts.ServerName)
	}
	if opts.Cluster.Name == "" || opts.Cluster.Port != 6222 {
		t.Errorf("cluster name %q port %d: want a named cluster on 6222", opts.Cluster.Name, opts.Cluster.Port)
	}
	if len(opts.Routes) != 3 {
		t.Errorf("%d routes, want 3", len(opts.Routes))
	}
	if !opts.JetStream || opts.MaxPayload != 8<<20 {
		t.Errorf("jetstream %v max_payload %d: want JetStream and 8MB", opts.JetStream, opts.MaxPayload)
	}
	if len(opts.Users) == 0 {
		t.Error("cluster.conf does not include the accounts")
	}
}

func TestNATSAccountPermissions(t *testing.T) {
	natsEnv(t)
	opts, err := server.ProcessConfigFile(filepath.Join("nats", "accounts.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var agents []string
	var svc *server.User
	for _, u := range opts.Users {
		if u.Account == nil {
			t.Errorf("user %s has no account", u.Username)
			continue
		}
		if u.Account.Name == serviceAcct {
			if u.Username == serviceUser {
				svc = u
			}
			continue
		}
		agent := u.Username
		agents = append(agents, agent)
		if u.Account.Name != agentAccount(agent) {
			t.Errorf("agent user %s is in account %s, want %s", agent, u.Account.Name, agentAccount(agent))
		}
		p := u.Permissions
		if p == nil || p.Publish == nil || p.Subscribe == nil {
			t.Errorf("agent user %s: want explicit publish and subscribe permissions", agent)
			continue
		}
		if got, want := sorted(p.Publish.Allow), sorted(agentSubjects(agent)); !slices.Equal(got, want) {
			t.Errorf("agent %s may publish %v, want exactly %v", agent, got, want)
		}
		if got := p.Subscribe.Allow; !slices.Equal(got, []string{"_INBOX.>"}) {
			t.Errorf("agent %s may subscribe %v, want only _INBOX.> (replies)", agent, got)
		}
		if p.Response != nil {
			t.Errorf("agent %s may answer requests; agents only ask", agent)
		}
	}
	if len(agents) < 2 {
		t.Errorf("want at least two example agents, have %v", agents)
	}
	if svc == nil || svc.Permissions == nil || svc.Permissions.Publish == nil || svc.Permissions.Subscribe == nil {
		t.Fatalf("no %s user with permissions in account %s", serviceUser, serviceAcct)
	}
	for _, want := range []string{"clawmem.>", "$JS.API.>"} {
		if !slices.Contains(svc.Permissions.Publish.Allow, want) {
			t.Errorf("service user may not publish %s", want)
		}
	}
	// Every bucket clawmem creates must be writable by its processes.
	for _, want := range []string{"$KV." + schemas.BucketCursors + ".>", "$KV." + schemas.BucketWatch + ".>",
		"$KV." + schemas.BucketDistill + ".>", "$O." + schemas.BucketBackups + ".>"} {
		if !slices.Contains(svc.Permissions.Publish.Allow, want) {
			t.Errorf("service user may not publish %s", want)
		}
	}
	for _, want := range []string{"clawmem.>", "$SRV.>"} {
		if !slices.Contains(svc.Permissions.Subscribe.Allow, want) {
			t.Errorf("service user may not subscribe %s", want)
		}
	}
	if svc.Permissions.Response == nil {
		t.Error("service user cannot answer requests from agent accounts (allow_responses)")
	}
}

// TestNATSAccountsLive runs a server with accounts.conf and checks what each
// user can and cannot do: the service user sets up clawmem's streams and
// serves requests; an agent publishes events and transcripts and asks the
// service for its own subjects only, and cannot see another agent's replies.
func TestNATSAccountsLive(t *testing.T) {
	env := natsEnv(t)
	opts, err := server.ProcessConfigFile(filepath.Join("nats", "accounts.conf"))
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", -1, 0
	opts.JetStream, opts.StoreDir = true, t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	connect := func(user, pw string) (*nats.Conn, chan error) {
		t.Helper()
		errs := make(chan error, 64)
		nc, err := nats.Connect(s.ClientURL(), nats.UserInfo(user, pw), nats.Name(user),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				select {
				case errs <- err:
				default:
				}
			}))
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(nc.Close)
		return nc, errs
	}
	expectDenied := func(errs chan error, subject string) {
		t.Helper()
		deadline := time.After(3 * time.Second)
		for {
			select {
			case err := <-errs:
				msg := strings.ToLower(err.Error())
				if strings.Contains(msg, "permissions violation") && strings.Contains(msg, strings.ToLower(subject)) {
					return
				}
			case <-deadline:
				t.Errorf("no permissions violation for %q", subject)
				return
			}
		}
	}
	noAsyncErrors := func(who string, errs chan error) {
		t.Helper()
		select {
		case err := <-errs:
			t.Errorf("%s: unexpected async error: %v", who, err)
		default:
		}
	}

	// The service user: streams and KV as clawmem creates them, a consumer,
	// and a stand-in for the query service answering clawmem.v1.<agent>.<op>.
	svc, svcErrs := connect(serviceUser, env["CLAWMEM_NATS_PASSWORD"])
	js, err := jetstream.New(svc)
	if err != nil {
		t.Fatal(err)
	}
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		t.Fatalf("service user cannot create clawmem's streams: %v", err)
	}
	kv, err := js.KeyValue(ctx, "clawmem_cursors")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "main.s1", []byte("1")); err != nil {
		t.Fatalf("service user cannot write the cursor bucket: %v", err)
	}
	svcMicro, err := micro.AddService(svc, micro.Config{Name: "clawmem", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer svcMicro.Stop()
	if err := svcMicro.AddEndpoint("recall", micro.HandlerFunc(func(r micro.Request) {
		agent := strings.Split(r.Subject(), ".")[2]
		_ = r.Respond([]byte(agent))
	}), micro.WithEndpointSubject("clawmem.v1.*.recall")); err != nil {
		t.Fatal(err)
	}

	mainNC, mainErrs := connect("main", env["CLAWMEM_AGENT_MAIN_PASSWORD"])
	botNC, botErrs := connect("discord-bot", env["CLAWMEM_AGENT_DISCORD_BOT_PASSWORD"])

	// An agent hands in its own events as requests; clawmem's hook service
	// (running as the service user) checks them and puts them on the stream,
	// acked and deduplicated, with no stream sequence in the reply.
	hooksCtx, stopHooks := context.WithCancel(ctx)
	defer stopHooks()
	go func() { _ = producers.NewHookService(producers.New(js), nil).Run(hooksCtx, svc) }()
	hook := func(nc *nats.Conn, agent, envAgent, msgID string) (producers.HookReply, error) {
		m := nats.NewMsg("clawmem.hooks.v1." + agent + ".agent_end")
		m.Data = []byte(`{"v":1,"kind":"agent_end","agentId":"` + envAgent + `","sessionKey":"s1","ts":1,"event":{"success":true,"messages":[]}}`)
		m.Header.Set("Nats-Msg-Id", msgID)
		var reply *nats.Msg
		var err error
		for range 50 { // the hook service subscribes a moment after the goroutine starts
			if reply, err = nc.RequestMsg(m, 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		var r producers.HookReply
		if err == nil {
			if strings.Contains(string(reply.Data), "seq") {
				t.Errorf("hook reply reveals the stream's sequence: %s", reply.Data)
			}
			err = json.Unmarshal(reply.Data, &r)
		}
		return r, err
	}
	for i, want := range []bool{false, true} {
		r, err := hook(mainNC, "main", "main", "agent_end.main.evt-1")
		if err != nil || !r.OK {
			t.Fatalf("agent main handing in its event (try %d): %+v %v", i+1, r, err)
		}
		if r.Duplicate != want {
			t.Errorf("try %d: duplicate %v, want %v (Nats-Msg-Id must pass the hook service)", i+1, r.Duplicate, want)
		}
	}
	// discord-bot guessing main's Msg-Id does not make main's event a duplicate.
	if r, err := hook(botNC, "discord-bot", "discord-bot", "agent_end.main.evt-2"); err != nil || !r.OK {
		t.Fatalf("discord-bot's own event: %+v %v", r, err)
	}
	if r, err := hook(mainNC, "main", "main", "agent_end.main.evt-2"); err != nil || !r.OK || r.Duplicate {
		t.Errorf("main's event after discord-bot claimed its Msg-Id: %+v %v, want stored", r, err)
	}
	// An envelope naming another agent is refused.
	if r, err := hook(botNC, "discord-bot", "main", "x"); err != nil || r.OK || r.Code != "invalid" {
		t.Errorf("discord-bot's envelope naming main: %+v %v, want refused", r, err)
	}
	events, err := js.Stream(ctx, "CLAWMEM_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := events.GetLastMsgForSubject(ctx, "clawmem.events.agent_end.main"); err != nil {
		t.Errorf("main's event is not in CLAWMEM_EVENTS: %v", err)
	}

	// The service user consumes and acks.
	cons, err := js.CreateOrUpdateConsumer(ctx, "CLAWMEM_EVENTS", jetstream.ConsumerConfig{Durable: "deploytest", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for m := range batch.Messages() {
		got++
		if err := m.DoubleAck(ctx); err != nil {
			t.Errorf("service user cannot ack: %v", err)
		}
	}
	if got != 1 {
		t.Errorf("service user fetched %d messages, want 1 (%v)", got, batch.Error())
	}

	// Requests for one's own agent are answered.
	for _, c := range []struct {
		nc    *nats.Conn
		agent string
	}{{mainNC, "main"}, {botNC, "discord-bot"}} {
		msg, err := c.nc.Request("clawmem.v1."+c.agent+".recall", []byte(`{"query":"x"}`), 5*time.Second)
		if err != nil {
			t.Fatalf("%s recall: %v", c.agent, err)
		}
		if string(msg.Data) != c.agent {
			t.Errorf("%s recall answered %q", c.agent, msg.Data)
		}
	}

	// Another agent's subjects, the pipeline's internals and raw streams are refused.
	for _, subj := range []string{
		"clawmem.events.agent_end.main",
		"clawmem.events.agent_end.discord-bot",
		"clawmem.transcript.main.s1",
		"clawmem.hooks.v1.discord-bot.agent_end",
		"clawmem.work.candidates.main",
		"clawmem.admin.v1.stats",
		"$JS.API.INFO",
	} {
		if err := mainNC.Publish(subj, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		expectDenied(mainErrs, subj)
	}
	if _, err := mainNC.Request("clawmem.v1.discord-bot.recall", []byte(`{}`), 500*time.Millisecond); err == nil {
		t.Error("main got an answer to discord-bot's recall")
	}
	expectDenied(mainErrs, "clawmem.v1.discord-bot.recall")
	// discord-bot's one event is all its subject holds: main's publishes as
	// discord-bot stored nothing.
	if info, err := events.Info(ctx, jetstream.WithSubjectFilter("clawmem.events.agent_end.discord-bot")); err != nil {
		t.Fatal(err)
	} else if n := info.State.Subjects["clawmem.events.agent_end.discord-bot"]; n != 1 {
		t.Errorf("discord-bot's subject holds %d events, want only its own 1", n)
	}
	// The memory log, the writer's lease and endpoints, and the backups
	// (snapshots) are the service's: the service user writes them, and no
	// agent reads or writes any of them, its own memories' included.
	leases, err := js.KeyValue(ctx, "clawmem_leases")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Put(ctx, "writer", []byte(`{"v":1,"holder":"w1"}`)); err != nil {
		t.Fatalf("service user cannot take the writer's lease: %v", err)
	}
	if _, err := js.Publish(ctx, "clawmem.mem.3.agent_main.6b0f2d4e-0000-4000-8000-000000000001", []byte(`{}`)); err != nil {
		t.Fatalf("service user cannot publish to the memory log: %v", err)
	}
	for _, subj := range []string{"clawmem.writer.v1.main.store", "$KV.clawmem_leases.writer"} {
		if err := mainNC.Publish(subj, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		expectDenied(mainErrs, subj)
	}
	for _, subj := range []string{"clawmem.mem.>", "clawmem.mem.3.agent_main.>", "$KV.clawmem_leases.>", "$O.clawmem_backups.>"} {
		if _, err := mainNC.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
		expectDenied(mainErrs, subj)
	}
	for _, subj := range []string{"clawmem.>", "clawmem.events.*.main", "$SRV.>"} {
		if _, err := mainNC.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
		expectDenied(mainErrs, subj)
	}

	// Replies live in the asking agent's account: main's _INBOX.> sees none of discord-bot's.
	snoop, err := mainNC.SubscribeSync("_INBOX.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := mainNC.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := botNC.Request("clawmem.v1.discord-bot.recall", []byte(`{"query":"secret"}`), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if m, err := snoop.NextMsg(300 * time.Millisecond); err == nil {
		t.Errorf("main saw discord-bot's reply on %s: %q", m.Subject, m.Data)
	}

	// Operators reach the service's discovery endpoints but cannot write memories.
	ops, opsErrs := connect("ops", env["CLAWMEM_OPS_PASSWORD"])
	if _, err := ops.Request("$SRV.PING.clawmem", nil, 5*time.Second); err != nil {
		t.Errorf("ops cannot ping the clawmem service: %v", err)
	}
	if err := ops.Publish("clawmem.events.agent_end.main", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	expectDenied(opsErrs, "clawmem.events.agent_end.main")

	noAsyncErrors("service user", svcErrs)
	noAsyncErrors("discord-bot", botErrs)
}

// ---------------------------------------------------------------- systemd

func TestSystemdUnit(t *testing.T) {
	text := readFile(t, filepath.Join("systemd", "clawmem.service"))
	for _, want := range []string{"[Unit]", "[Service]", "[Install]", "WantedBy=default.target", "Environment=CLAWMEM_DATA_DIR="} {
		if !strings.Contains(text, want) {
			t.Errorf("clawmem.service lacks %q", want)
		}
	}
	execStart := regexp.MustCompile(`(?m)^ExecStart=(.*)$`).FindAllStringSubmatch(text, -1)
	if len(execStart) != 1 || !strings.HasSuffix(strings.Fields(execStart[0][1])[0], "/clawmem") ||
		!slices.Contains(strings.Fields(execStart[0][1]), "up") {
		t.Errorf("ExecStart %v: want one `.../clawmem up`", execStart)
	}
	if !regexp.MustCompile(`(?m)^#\s*Environment=[A-Z_]*API_KEY=`).MatchString(text) {
		t.Error("no example Environment= line for an API key")
	}
	for _, m := range regexp.MustCompile(`(?m)^Environment=([A-Za-z_]+)=(.*)$`).FindAllStringSubmatch(text, -1) {
		if secretName.MatchString(m[1]) && m[2] != "" {
			t.Errorf("clawmem.service sets %s in the unit; use EnvironmentFile", m[1])
		}
	}
	checkTextSecrets(t, "clawmem.service", text)
}

// ---------------------------------------------------------------- Kubernetes

type k8sDoc struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Replicas    *int           `yaml:"replicas"`
		ServiceName string         `yaml:"serviceName"`
		ClusterIP   string         `yaml:"clusterIP"`
		Selector    map[string]any `yaml:"selector"`
		Template    struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		VolumeClaimTemplates []struct {
			Metadata struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
		} `yaml:"volumeClaimTemplates"`
		Ports []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
	Data      map[string]string `yaml:"data"`
	Resources []string          `yaml:"resources"`
}

type podSpec struct {
	SecurityContext struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
		RunAsUser    *int  `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	Containers []container `yaml:"containers"`
	Volumes    []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
	} `yaml:"volumes"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Env   []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports          []containerPort `yaml:"ports"`
	VolumeMounts   []volumeMount   `yaml:"volumeMounts"`
	ReadinessProbe any             `yaml:"readinessProbe"`
}

type containerPort struct {
	ContainerPort int `yaml:"containerPort"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	ReadOnly  bool   `yaml:"readOnly"`
}

func (c container) env(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func loadK8s(t *testing.T) (docs map[string]k8sDoc, files map[string]bool) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("k8s", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs, files = map[string]k8sDoc{}, map[string]bool{}
	for _, p := range paths {
		files[filepath.Base(p)] = true
		dec := yaml.NewDecoder(strings.NewReader(readFile(t, p)))
		for i := 0; ; i++ {
			var node yaml.Node
			err := dec.Decode(&node)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s document %d: %v", p, i, err)
			}
			checkYAMLSecrets(t, p, &node)
			var d k8sDoc
			if err := node.Decode(&d); err != nil {
				t.Fatalf("%s document %d: %v", p, i, err)
			}
			if d.APIVersion == "" || d.Kind == "" {
				t.Errorf("%s document %d: no apiVersion or kind", p, i)
			}
			if d.Kind == "Secret" {
				t.Errorf("%s: a Secret is committed; create it with kubectl instead", p)
			}
			name := d.Metadata.Name
			if d.Kind == "Kustomization" {
				name = "kustomization"
			} else if name == "" {
				t.Errorf("%s document %d (%s): no metadata.name", p, i, d.Kind)
			}
			key := d.Kind + "/" + name
			if _, dup := docs[key]; dup {
				t.Errorf("%s: %s defined twice", p, key)
			}
			docs[key] = d
		}
	}
	return docs, files
}

func TestK8sManifests(t *testing.T) {
	docs, files := loadK8s(t)
	need := func(key string) k8sDoc {
		t.Helper()
		d, ok := docs[key]
		if !ok {
			t.Fatalf("deploy/k8s: no %s (have %v)", key, mapKeys(docs))
		}
		return d
	}

	k := need("Kustomization/kustomization")
	listed := map[string]bool{"kustomization.yaml": true}
	for _, r := range k.Resources {
		listed[r] = true
		if !files[r] {
			t.Errorf("kustomization lists %s, which does not exist", r)
		}
	}
	for f := range files {
		if !listed[f] {
			t.Errorf("%s is not in kustomization.yaml's resources", f)
		}
	}

	cm := need("ConfigMap/clawmem-config")
	cfgs := map[string]jsonConfig{}
	for key, raw := range cm.Data {
		if strings.HasSuffix(key, ".json") {
			cfgs[key] = parseConfig(t, "ConfigMap clawmem-config "+key, []byte(raw))
		}
	}
	checkSameEmbedding(t, "ConfigMap clawmem-config", cfgs)

	workload := func(d k8sDoc, role string) container {
		t.Helper()
		where := d.Kind + "/" + d.Metadata.Name
		match, _ := d.Spec.Selector["matchLabels"].(map[string]any)
		if len(match) == 0 {
			t.Errorf("%s: no selector.matchLabels", where)
		}
		for k, v := range match {
			if d.Spec.Template.Metadata.Labels[k] != fmt.Sprint(v) {
				t.Errorf("%s: selector %s=%v does not match the pod labels", where, k, v)
			}
		}
		ps := d.Spec.Template.Spec
		if ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: want runAsNonRoot", where)
		}
		if u := ps.SecurityContext.RunAsUser; u == nil || fmt.Sprint(*u) != runtimeUID {
			t.Errorf("%s: want runAsUser %s (the image's user)", where, runtimeUID)
		}
		if len(ps.Containers) != 1 {
			t.Fatalf("%s: want one container", where)
		}
		c := ps.Containers[0]
		if got := checkWorkerArgs(t, where, c.Args); got != role {
			t.Errorf("%s runs role %q, want %q", where, got, role)
		}
		if v, _ := c.env("CLAWMEM_DATA_DIR"); v != dataDir {
			t.Errorf("%s: CLAWMEM_DATA_DIR %q, want %s", where, v, dataDir)
		}
		mounts := map[string]string{}
		for _, m := range c.VolumeMounts {
			mounts[m.MountPath] = m.Name
		}
		if mounts[dataDir] == "" {
			t.Errorf("%s: nothing mounted at %s", where, dataDir)
		}
		conf, ok := flagValue(c.Args, "--config")
		if !ok {
			t.Fatalf("%s: no --config", where)
		}
		vol := mounts[path.Dir(conf)]
		okCM := false
		for _, v := range ps.Volumes {
			if v.Name == vol && v.ConfigMap != nil && v.ConfigMap.Name == cm.Metadata.Name {
				okCM = true
			}
		}
		if !okCM {
			t.Errorf("%s: --config %s is not in a mount of ConfigMap %s", where, conf, cm.Metadata.Name)
		}
		if _, ok := cfgs[path.Base(conf)]; !ok {
			t.Errorf("%s: ConfigMap has no %s", where, path.Base(conf))
		}
		return c
	}

	store := need("StatefulSet/clawmem-store")
	workload(store, "store")
	if store.Spec.Replicas == nil || *store.Spec.Replicas < 2 {
		t.Error("StatefulSet clawmem-store: want 2 or more writers (they share the partitions; one takes over a dead one's)")
	}
	if len(store.Spec.VolumeClaimTemplates) == 0 {
		t.Error("StatefulSet clawmem-store: no volumeClaimTemplates")
	} else if c := store.Spec.Template.Spec.Containers[0]; !slices.ContainsFunc(c.VolumeMounts, func(m volumeMount) bool {
		return m.MountPath == dataDir && m.Name == store.Spec.VolumeClaimTemplates[0].Metadata.Name
	}) {
		t.Errorf("StatefulSet clawmem-store: the claim is not mounted at %s", dataDir)
	}
	if hs := need("Service/" + store.Spec.ServiceName); hs.Spec.ClusterIP != "None" {
		t.Errorf("Service %s: want headless (clusterIP: None)", store.Spec.ServiceName)
	}

	workload(need("Deployment/clawmem-capture"), "capture")
	if q := need("Deployment/clawmem-query"); q.Spec.Replicas == nil || *q.Spec.Replicas < 2 {
		t.Error("Deployment clawmem-query: want 2 or more query replicas")
	} else {
		workload(q, "query")
	}
	for key, cfg := range cfgs {
		if r, _ := cfg["nats.replicas"].(float64); r != 3 {
			t.Errorf("ConfigMap clawmem-config %s: nats.replicas %v, want 3 (the NATS StatefulSet's nodes)", key, cfg["nats.replicas"])
		}
	}
	checkK8sNATS(t, need)

	ingest := need("Deployment/clawmem-ingest")
	c := workload(ingest, "ingest")
	conf, _ := flagValue(c.Args, "--config")
	icfg := cfgs[path.Base(conf)]
	token, _ := icfg.str("ingest.token")
	ev := envRefName(token)
	if ev == "" {
		t.Fatalf("ingest config token %q: want a ${VAR} reference", token)
	}
	found := false
	for _, e := range c.Env {
		if e.Name == ev {
			found = true
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("ingest: %s must come from a Secret (valueFrom.secretKeyRef)", ev)
			}
		}
	}
	if !found {
		t.Errorf("ingest: the config reads $%s but the container does not set it", ev)
	}
	if !slices.ContainsFunc(c.Ports, func(p containerPort) bool {
		return fmt.Sprint(p.ContainerPort) == ingestPort
	}) {
		t.Errorf("ingest: container port %s not declared", ingestPort)
	}
	if c.ReadinessProbe == nil {
		t.Error("ingest: no readinessProbe")
	}
	svc := need("Service/clawmem-ingest")
	for k, v := range svc.Spec.Selector {
		if ingest.Spec.Template.Metadata.Labels[k] != fmt.Sprint(v) {
			t.Errorf("Service clawmem-ingest selector %s=%v does not select the ingest pods", k, v)
		}
	}
	if len(svc.Spec.Ports) == 0 || fmt.Sprint(svc.Spec.Ports[0].Port) != ingestPort {
		t.Errorf("Service clawmem-ingest: want port %s", ingestPort)
	}
}

// checkK8sNATS checks the NATS StatefulSet: three nodes started together,
// routes to each pod through the headless Service, the client Service
// clawmem's configs name, and a server config like `clawmem nats config
// --cluster 3 --open`'s but for the pods' names.
func checkK8sNATS(t *testing.T, need func(string) k8sDoc) {
	t.Helper()
	sts := need("StatefulSet/nats")
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
		t.Error("StatefulSet nats: want 3 nodes")
	}
	if hs := need("Service/" + sts.Spec.ServiceName); hs.Spec.ClusterIP != "None" {
		t.Errorf("Service %s: want headless for the routes", sts.Spec.ServiceName)
	}
	if svc := need("Service/" + natsService); len(svc.Spec.Ports) == 0 || fmt.Sprint(svc.Spec.Ports[0].Port) != natsPort {
		t.Errorf("Service %s: want port %s", natsService, natsPort)
	}
	if len(sts.Spec.VolumeClaimTemplates) == 0 {
		t.Error("StatefulSet nats: no volumeClaimTemplates for JetStream")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte(need("ConfigMap/nats-config").Data["nats.conf"]), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POD_NAME", "nats-1")
	got, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats.conf: %v", err)
	}
	gen, err := natsconf.Generate(natsconf.Options{Cluster: 3, Open: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := server.ProcessConfigFile(filepath.Join("nats", "cluster", gen[0].Name))
	if err != nil {
		t.Fatal(err)
	}
	if got.ServerName != "nats-1" {
		t.Errorf("nats.conf server_name %q: want the pod's name", got.ServerName)
	}
	if got.JetStream != want.JetStream || got.StoreDir != want.StoreDir || got.JetStreamMaxStore != want.JetStreamMaxStore ||
		got.JetStreamMaxMemory != want.JetStreamMaxMemory || got.MaxPayload != want.MaxPayload || got.LameDuckDuration != want.LameDuckDuration ||
		got.Cluster.Name != want.Cluster.Name || got.Cluster.Port != want.Cluster.Port || got.Port != want.Port {
		t.Errorf("nats.conf differs from `clawmem nats config --cluster 3 --open`'s node file in more than names")
	}
	var routes []string
	for _, r := range got.Routes {
		routes = append(routes, r.Host)
	}
	for i := range 3 {
		if host := fmt.Sprintf("nats-%d.%s:6222", i, sts.Spec.ServiceName); !slices.Contains(routes, host) {
			t.Errorf("nats.conf routes %v: none to %s", routes, host)
		}
	}
}

// ---------------------------------------------------------------- secrets

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

// ---------------------------------------------------------------- helpers

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

// deploy/nats/accounts.conf is what `clawmem nats config` generates for its
// two example agents, so the shipped file and the generator never drift.
func TestAccountsConfIsGenerated(t *testing.T) {
	files, err := natsconf.Generate(natsconf.Options{Agents: []string{"main", "discord-bot"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join("nats", "accounts.conf")); got != files[0].Text {
		t.Error("deploy/nats/accounts.conf differs from `clawmem nats config --agents main,discord-bot`: regenerate it")
	}
}
