package console

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/internal/authdir"
	"github.com/clawmem/clawmem/internal/instance"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/workers/lessons"
)

// AdminToken is the console's admin token: ui.adminToken, else the data
// dir's auth/console.token, made when create.
func AdminToken(cfg *config.Config, create bool) (string, error) {
	tok, err := envsubst.Expand(cfg.UI.AdminToken)
	if err != nil {
		return "", fmt.Errorf("ui.adminToken: %w", err)
	}
	if tok != "" {
		return tok, nil
	}
	if create {
		tok, err = authdir.Token(cfg.DataDir, authdir.ConsoleToken)
	} else {
		tok, err = authdir.Read(cfg.DataDir, authdir.ConsoleToken)
	}
	if err != nil {
		return "", fmt.Errorf("the console's token: %w (clawmem up or clawmem ui makes it at first start)", err)
	}
	return tok, nil
}

// Service serves the console beside a node's roles (clawmem up, clawmem
// ui): its memory operations go to the query service over the roles'
// connection, its pipeline operations over a connection of its own. file
// is the configuration file the console's configuration page reads.
func Service(cfg *config.Config, file *config.Options, log *slog.Logger) node.Service {
	return node.Service{Name: "console", Listen: cfg.UI.Listen, Run: func(ctx context.Context, nc *nats.Conn, natsURL string, ln net.Listener) error {
		ui := Config{Listen: cfg.UI.Listen, AllowedHosts: cfg.UI.AllowedHosts}
		var err error
		if ui.ReadToken, err = envsubst.Expand(cfg.UI.ReadToken); err != nil {
			ln.Close()
			return fmt.Errorf("ui.readToken: %w", err)
		}
		if ui.AdminToken, err = AdminToken(cfg, true); err != nil {
			ln.Close()
			return err
		}
		p := client.NewNATSPipeline(func() (*nats.Conn, error) { return instance.Connect(natsURL, cfg, "clawmem-console") })
		defer p.Close()
		opts := Options{
			Client:        client.NewNATS(nc),
			Pipeline:      p,
			ConfigFile:    file,
			StartupChecks: func() ([]StartupCheck, time.Time, bool) { return startupChecks(cfg.DataDir) },
			Distill: func(ctx context.Context, agent, session string) (lessons.TranscriptReport, error) {
				d, err := node.NewDistiller(cfg)
				if err != nil {
					return lessons.TranscriptReport{}, err
				}
				return p.Distill(ctx, d, node.TranscriptConfig(cfg), lessons.TranscriptRun{Agent: agent, Session: session, IgnoreIdle: true}, log)
			},
			Log: log,
		}
		srv, err := New(ui, opts)
		if err != nil {
			ln.Close()
			return err
		}
		how := "clawmem ui login --data-dir " + cfg.DataDir
		if ln.Addr().String() != cfg.UI.Listen {
			how += " --url http://" + ln.Addr().String()
		}
		log.Info("console: sign in with the one-time link `"+how+"` prints, or log in with ui.adminToken or auth/console.token", "url", "http://"+ln.Addr().String())
		return srv.Serve(ctx, ln)
	}}
}

// startupChecks are the checks of the last start on dataDir, as the
// overview shows them.
func startupChecks(dataDir string) ([]StartupCheck, time.Time, bool) {
	rep, ok := node.ReadStartupReport(dataDir)
	var out []StartupCheck
	for _, c := range rep.Checks {
		out = append(out, StartupCheck{Name: c.Name, OK: c.OK, Detail: c.Detail, Fix: c.Fix})
	}
	return out, rep.Time, ok
}
