package node

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/internal/instance"
	"github.com/clawmem/clawmem/internal/natsauth"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/schemas"
)

// serveAuthReload answers clawmem.admin.v1.auth-reload for the embedded
// server: `clawmem agent add|remove` changed the data dir's users, and the
// server takes them in by restarting (its clients reconnect within a
// second). Only clawmem's own user reaches admin subjects.
func serveAuthReload(nc *nats.Conn, srv *natsembed.Server, log *slog.Logger) (*nats.Subscription, error) {
	return nc.Subscribe(schemas.AdminSubject(schemas.OpAuthReload), func(m *nats.Msg) {
		// Answer first: the restart drops this connection.
		_ = m.Respond([]byte(`{"ok":true}`))
		_ = nc.Flush()
		go func() {
			time.Sleep(100 * time.Millisecond)
			log.Info("NATS users changed: restarting the embedded server")
			if err := srv.Restart(); err != nil {
				log.Error("embedded NATS restart after a change of users failed", "err", err)
			}
		}()
	})
}

// ReloadAuth asks the running `clawmem up` on the data dir to take in
// changed users, and waits until it has; without a running instance
// there is nothing to do (the next start reads them).
func ReloadAuth(cfg *config.Config) error {
	if !instance.Running(cfg.DataDir) {
		return nil
	}
	url := instance.LocalNATS(cfg)
	nc, err := instance.Connect(url, cfg, "clawmem-agent")
	if err != nil {
		return err
	}
	defer nc.Close()
	// Right after an earlier change the instance's own connection may
	// still be coming back from the restart: ask again for a while.
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := nc.Request(schemas.AdminSubject(schemas.OpAuthReload), nil, 5*time.Second)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ask the running clawmem to take in the new credentials: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// AgentCreds is what a gateway or an MCP client needs to reach the
// embedded server of cfg's data dir as one agent.
type AgentCreds struct {
	Agent           string `json:"agent"`
	NATSURL         string `json:"natsUrl"`
	CredentialsFile string `json:"credentialsFile"`
	// Reaches are the agents the credentials act for: the agent itself, or
	// a gateway's agents ("*": every agent).
	Reaches []string `json:"reaches"`
	Created bool     `json:"created"`
}

// AgentCredentials are agent's credentials on cfg's data dir; created
// says whether they are new.
func AgentCredentials(cfg *config.Config, agent string, created bool) AgentCreds {
	return AgentCreds{Agent: agent, NATSURL: instance.LocalNATS(cfg), CredentialsFile: natsauth.AgentSeed(cfg.DataDir, agent),
		Reaches: natsauth.Reaches(cfg.DataDir, agent), Created: created}
}

// WriteText prints the credentials for a person.
func (c AgentCreds) WriteText(w io.Writer) {
	state := "existing"
	if c.Created {
		state = "new"
	}
	fmt.Fprintf(w, "%s (%s credentials)\n  acts for         %s\n  natsUrl          %s\n  credentialsFile  %s\n",
		c.Agent, state, strings.Join(c.Reaches, ", "), c.NATSURL, c.CredentialsFile)
}

// AwaitAdmitted waits until the running `clawmem up` on cfg's data dir
// admits the seed at path (its server restarts to take it in), so that
// whoever was handed the seed can use it at once. Without a running
// instance there is nothing to wait for.
func AwaitAdmitted(cfg *config.Config, path string) error {
	if !instance.Running(cfg.DataDir) {
		return nil
	}
	opt, err := natsauth.ClientOption(path)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		nc, err := nats.Connect(instance.LocalNATS(cfg), opt, nats.Name("clawmem-agent-check"))
		if err == nil {
			nc.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the running clawmem does not admit the new credentials yet: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
