// Package natsconf generates clawmem's NATS server configuration: the
// accounts (the pipeline's account with its service and operator users,
// and one account per agent that reaches only its own subjects) and, for a
// cluster, one server file per node. deploy/nats/accounts.conf is its
// output, and a test keeps it so.
package natsconf

import (
	"bytes"
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"

	"github.com/clawmem/clawmem/schemas"
)

//go:embed accounts.conf.tmpl
var accountsTmpl string

//go:embed server.conf.tmpl
var serverTmpl string

// Options say what to generate.
type Options struct {
	Agents []string
	// Partitions is the memory log's partition count, stated in the server
	// files (the writer computes partitions; the server maps nothing).
	Partitions int
	// Cluster is the number of nodes; 0 or 1 generates no server files.
	Cluster int
	// Open generates server files without accounts (and no accounts.conf),
	// for a private network only.
	Open bool
	// NKeys, when set, authenticates by nkey instead of password: the
	// public key of clawmem's own user ("clawmem") and of each agent's (by
	// agent id). The embedded server of `clawmem up` uses it: its config
	// then holds no secret, and it leaves out the operators' user.
	NKeys map[string]string
	// Gateways are users that act for several agents at once (an OpenClaw
	// gateway hosting them): by name, the agent ids each reaches ("*":
	// every agent). Each has its own account, like an agent's.
	Gateways map[string][]string
}

// agent is one agent's names in the files.
type agent struct {
	ID, Account, PasswordVar, NKey string
	// Reaches are the agent ids whose subjects the user may use: its own,
	// or a gateway's agents.
	Reaches   []string
	ReachList string
	Gateway   bool
}

// export is one agent's subjects and the accounts that may reach them.
type export struct {
	Agent, Accounts string
}

// File is one generated file.
type File struct {
	Name string
	Text string
}

// Generate returns accounts.conf and, for a cluster, nats-<n>.conf for
// each node.
func Generate(o Options) ([]File, error) {
	if o.Open && o.Cluster <= 1 {
		return nil, fmt.Errorf("%w: --open generates cluster node files only: give --cluster 3", schemas.ErrInvalid)
	}
	if len(o.Agents) == 0 && !o.Open && o.NKeys == nil {
		return nil, fmt.Errorf("%w: name the agents (--agents main,discord-bot)", schemas.ErrInvalid)
	}
	if o.Partitions <= 0 {
		o.Partitions = schemas.DefaultPartitions
	}
	if o.Cluster < 0 || o.Cluster > 9 {
		return nil, fmt.Errorf("%w: --cluster %d: want 1 to 9 nodes (3 or 5 for a quorum)", schemas.ErrInvalid, o.Cluster)
	}
	var agents []agent
	byAccount := map[string]string{}
	add := func(id string, reaches []string, gateway bool) error {
		if err := schemas.ValidateAgentID(id); err != nil {
			return err
		}
		upper := strings.ToUpper(strings.NewReplacer("-", "_").Replace(id))
		a := agent{ID: id, Account: "AGENT_" + upper, PasswordVar: "CLAWMEM_AGENT_" + upper + "_PASSWORD", NKey: o.NKeys[id],
			Reaches: reaches, ReachList: strings.Join(reaches, ", "), Gateway: gateway}
		if prev, dup := byAccount[a.Account]; dup {
			return fmt.Errorf("%w: agents %q and %q would share the account %s", schemas.ErrInvalid, prev, id, a.Account)
		}
		byAccount[a.Account] = id
		agents = append(agents, a)
		return nil
	}
	for _, id := range o.Agents {
		if err := add(id, []string{id}, false); err != nil {
			return nil, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(o.Gateways)) {
		reaches := slices.Sorted(slices.Values(o.Gateways[name]))
		if len(reaches) == 0 {
			return nil, fmt.Errorf("%w: gateway %q reaches no agent", schemas.ErrInvalid, name)
		}
		for _, r := range reaches {
			if r != "*" {
				if err := schemas.ValidateAgentID(r); err != nil {
					return nil, err
				}
			}
		}
		if err := add(name, slices.Compact(reaches), true); err != nil {
			return nil, err
		}
	}
	var exports []export
	for _, id := range reachable(agents) {
		var accounts []string
		for _, a := range agents {
			if slices.Contains(a.Reaches, id) {
				accounts = append(accounts, a.Account)
			}
		}
		exports = append(exports, export{Agent: id, Accounts: strings.Join(accounts, ", ")})
	}
	data := map[string]any{"Agents": agents, "Exports": exports, "AgentList": strings.Join(o.Agents, ","), "Partitions": o.Partitions, "Open": o.Open,
		"Embedded": o.NKeys != nil, "ClawmemNKey": o.NKeys["clawmem"]}
	var files []File
	if !o.Open {
		acc, err := render(accountsTmpl, data)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: "accounts.conf", Text: acc})
	}
	if o.Cluster <= 1 {
		return files, nil
	}
	var routes, urls []string
	for n := 1; n <= o.Cluster; n++ {
		routes = append(routes, fmt.Sprintf("nats-route://nats-%d:6222", n))
		if o.Open {
			urls = append(urls, fmt.Sprintf("nats://nats-%d:4222", n))
		} else {
			urls = append(urls, fmt.Sprintf("nats://clawmem:<pw>@nats-%d:4222", n))
		}
	}
	data["Nodes"], data["Routes"], data["ClientURLs"] = o.Cluster, routes, strings.Join(urls, ",")
	for n := 1; n <= o.Cluster; n++ {
		data["Node"] = n
		text, err := render(serverTmpl, data)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: fmt.Sprintf("nats-%d.conf", n), Text: text})
	}
	return files, nil
}

// reachable lists the agent ids users reach, in the order they first
// appear: agents first, as given, then gateways' others.
func reachable(agents []agent) []string {
	var ids []string
	for _, a := range agents {
		for _, r := range a.Reaches {
			if !slices.Contains(ids, r) {
				ids = append(ids, r)
			}
		}
	}
	return ids
}

func render(tmpl string, data any) (string, error) {
	t, err := template.New("").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}
