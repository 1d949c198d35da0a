// Package natsauth gives the embedded NATS server of `clawmem up` its
// users: clawmem's own (every clawmem process on the data dir) and one per
// agent, each an nkey whose seed is an owner-only file in the data dir's
// auth dir. The server's accounts are those of deploy/nats (natsconf), with
// nkeys for passwords, so an agent's user reaches only its own subjects
// whether clawmem runs embedded or on a cluster. The server only ever sees
// public keys; a client proves it holds a seed by signing the server's
// nonce.
package natsauth

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/clawmem/clawmem/internal/authdir"
	"github.com/clawmem/clawmem/internal/natsconf"
	"github.com/clawmem/clawmem/schemas"
)

// Account is the pipeline's account on the embedded server, named as in
// deploy/nats.
const Account = "CLAWMEM"

// Seed files: clawmem's own user, and one per agent.
const (
	seedExt   = ".nk"
	adminName = "clawmem"
)

// Dir holds the seeds: <dataDir>/auth/nats.
func Dir(dataDir string) string { return filepath.Join(authdir.Dir(dataDir), "nats") }

// AdminSeed is the seed file of clawmem's own user.
func AdminSeed(dataDir string) string { return filepath.Join(Dir(dataDir), adminName+seedExt) }

// AgentSeed is the seed file of agent's user.
func AgentSeed(dataDir, agent string) string {
	return filepath.Join(Dir(dataDir), "agents", agent+seedExt)
}

// EnsureAdmin creates clawmem's own seed if the data dir has none yet.
func EnsureAdmin(dataDir string) error {
	_, _, err := ensureSeed(dataDir, AdminSeed(dataDir))
	return err
}

// AddAgent gives agent a user (a new seed file) unless it has one;
// created says which.
func AddAgent(dataDir, agent string) (path string, created bool, err error) {
	return AddUser(dataDir, agent, nil)
}

// AddUser gives name a user that reaches the agents in reaches (an
// OpenClaw gateway hosting several agents; "*": every agent), or, with
// none, the agent name itself. changed says whether the server must take
// something new in: a new seed, or another set of agents.
func AddUser(dataDir, name string, reaches []string) (path string, changed bool, err error) {
	if err := schemas.ValidateAgentID(name); err != nil {
		return "", false, err
	}
	for _, r := range reaches {
		if r != "*" {
			if err := schemas.ValidateAgentID(r); err != nil {
				return "", false, err
			}
		}
	}
	path = AgentSeed(dataDir, name)
	if _, changed, err = ensureSeed(dataDir, path); err != nil {
		return "", false, err
	}
	list := reachFile(dataDir, name)
	old, _ := os.ReadFile(list)
	want := ""
	if len(reaches) > 0 && !slices.Equal(reaches, []string{name}) {
		sorted := slices.Compact(slices.Sorted(slices.Values(reaches)))
		want = strings.Join(sorted, "\n") + "\n"
	}
	if string(old) != want {
		changed = true
		if want == "" {
			err = os.Remove(list)
		} else {
			err = os.WriteFile(list, []byte(want), 0o600)
		}
	}
	return path, changed, err
}

// reachFile lists the agents a gateway user reaches, one a line; an agent's
// own user has none.
func reachFile(dataDir, name string) string {
	return filepath.Join(Dir(dataDir), "agents", name+".agents")
}

// Reaches are the agents name's user reaches.
func Reaches(dataDir, name string) []string {
	b, err := os.ReadFile(reachFile(dataDir, name))
	if err != nil {
		return []string{name}
	}
	return strings.Fields(string(b))
}

// RemoveAgent deletes agent's seed: after the next reload its user can no
// longer connect. Removing an agent that has none is an error.
func RemoveAgent(dataDir, agent string) error {
	if err := schemas.ValidateAgentID(agent); err != nil {
		return err
	}
	_ = os.Remove(reachFile(dataDir, agent))
	if err := os.Remove(AgentSeed(dataDir, agent)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: agent %q has no credentials on this data dir", schemas.ErrInvalid, agent)
		}
		return err
	}
	return nil
}

// Agents lists the agents that have a user, sorted.
func Agents(dataDir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(Dir(dataDir), "agents"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var agents []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), seedExt)
		if !ok || e.IsDir() || schemas.ValidateAgentID(id) != nil {
			continue
		}
		agents = append(agents, id)
	}
	slices.Sort(agents)
	return agents, nil
}

// ServerOptions writes the server's accounts (public keys only) to
// <dataDir>/auth/nats/server.conf and returns them loaded, for the caller
// to add its listen address and JetStream settings to. It creates
// clawmem's own seed on the first call.
func ServerOptions(dataDir string) (*server.Options, error) {
	if err := EnsureAdmin(dataDir); err != nil {
		return nil, err
	}
	keys := map[string]string{}
	pub, err := publicKey(AdminSeed(dataDir))
	if err != nil {
		return nil, err
	}
	keys[adminName] = pub
	agents, err := Agents(dataDir)
	if err != nil {
		return nil, err
	}
	for _, a := range agents {
		if keys[a], err = publicKey(AgentSeed(dataDir, a)); err != nil {
			return nil, err
		}
	}
	var own []string
	gateways := map[string][]string{}
	for _, a := range agents {
		if r := Reaches(dataDir, a); slices.Equal(r, []string{a}) {
			own = append(own, a)
		} else {
			gateways[a] = r
		}
	}
	files, err := natsconf.Generate(natsconf.Options{Agents: own, Gateways: gateways, NKeys: keys})
	if err != nil {
		return nil, err
	}
	path := filepath.Join(Dir(dataDir), "server.conf")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(files[0].Text), 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		return nil, fmt.Errorf("embedded nats accounts (%s): %w", path, err)
	}
	return opts, nil
}

// ClientOption authenticates a connection with the seed in path.
func ClientOption(path string) (nats.Option, error) {
	return nats.NkeyOptionFromSeed(path)
}

// MigrateStore moves JetStream state kept in the global account (a data
// dir from before credentials) into the pipeline's account, where the
// servers with accounts keep it, so no event, cursor or log entry is lost
// on upgrade. storeDir is the server's store dir; the server must be
// stopped. moved says whether there was anything to move.
func MigrateStore(storeDir string) (moved bool, err error) {
	from := filepath.Join(storeDir, "jetstream", server.DEFAULT_GLOBAL_ACCOUNT)
	to := filepath.Join(storeDir, "jetstream", Account)
	if _, err := os.Stat(from); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if _, err := os.Stat(to); err == nil {
		return false, fmt.Errorf("JetStream holds state for both %s and %s in %s: move or remove one (the global account's is from a clawmem before credentials)",
			server.DEFAULT_GLOBAL_ACCOUNT, Account, filepath.Dir(from))
	}
	if err := os.Rename(from, to); err != nil {
		return false, fmt.Errorf("move JetStream state to account %s: %w", Account, err)
	}
	return true, nil
}

// ensureSeed reads the user seed at path, creating it (owner-only) when
// missing.
func ensureSeed(dataDir, path string) (seed []byte, created bool, err error) {
	if seed, err = os.ReadFile(path); err == nil {
		return seed, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	if err := authdir.EnsureDir(dataDir); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, err
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, false, err
	}
	if seed, err = kp.Seed(); err != nil {
		return nil, false, err
	}
	if err := authdir.WriteNew(path, append(seed, '\n')); err != nil {
		if errors.Is(err, fs.ErrExist) {
			seed, err = os.ReadFile(path)
			return seed, false, err
		}
		return nil, false, err
	}
	return seed, true, nil
}

// publicKey is the public key of the user seed in path.
func publicKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(b))))
	if err != nil {
		return "", fmt.Errorf("%s: not an nkey seed: %w", path, err)
	}
	defer kp.Wipe()
	return kp.PublicKey()
}
