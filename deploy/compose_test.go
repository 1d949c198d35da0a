package deploy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

	"gopkg.in/yaml.v3"

	"github.com/clawmem/clawmem/internal/natsconf"
)

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
