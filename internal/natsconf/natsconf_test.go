package natsconf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/clawmem/clawmem/schemas"
)

// The generated cluster files load in nats-server: named nodes, routes to
// all, JetStream, and the accounts with one user per agent.
func TestClusterFilesLoad(t *testing.T) {
	files, err := Generate(Options{Agents: []string{"main", "discord-bot", "ops-helper"}, Cluster: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Fatalf("%d files, want accounts.conf and 3 nodes", len(files))
	}
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), []byte(f.Text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []string{"CLAWMEM_NATS_PASSWORD", "CLAWMEM_OPS_PASSWORD", "CLAWMEM_AGENT_MAIN_PASSWORD",
		"CLAWMEM_AGENT_DISCORD_BOT_PASSWORD", "CLAWMEM_AGENT_OPS_HELPER_PASSWORD"} {
		t.Setenv(v, "pw-"+strings.ToLower(v))
	}
	names := map[string]bool{}
	for n := 1; n <= 3; n++ {
		opts, err := server.ProcessConfigFile(filepath.Join(dir, files[n].Name))
		if err != nil {
			t.Fatalf("%s: %v", files[n].Name, err)
		}
		names[opts.ServerName] = true
		if !opts.JetStream || len(opts.Routes) != 3 || opts.Cluster.Name != "clawmem" || opts.MaxPayload != 8<<20 {
			t.Errorf("%s: jetstream %v routes %d cluster %q payload %d", files[n].Name, opts.JetStream, len(opts.Routes), opts.Cluster.Name, opts.MaxPayload)
		}
		users := map[string]bool{}
		for _, u := range opts.Users {
			users[u.Username] = true
		}
		for _, u := range []string{"clawmem", "ops", "main", "discord-bot", "ops-helper"} {
			if !users[u] {
				t.Errorf("%s: no user %s", files[n].Name, u)
			}
		}
	}
	if len(names) != 3 {
		t.Errorf("server names %v, want three", names)
	}
}

// Agent ids that are no subject token, or two agents that would share an
// account, are refused with the reason.
func TestBadAgents(t *testing.T) {
	for _, agents := range [][]string{nil, {"a.b"}, {"*"}, {">"}, {"../x"}, {"two words"}, {"a-b", "a_b"}, {""}} {
		if _, err := Generate(Options{Agents: agents}); !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("agents %q: %v, want an invalid-input error", agents, err)
		}
	}
	if _, err := Generate(Options{Agents: []string{"main"}, Cluster: 12}); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("12 nodes: %v", err)
	}
}
