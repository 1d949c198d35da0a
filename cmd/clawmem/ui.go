package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/console"
	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/workers"
)

func (a *app) uiCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the web console against a running clawmem (clawmem up serves it too)",
		Long: `Serves the web console — overview, memories, search with explanations, dead letters,
distillation and configuration — against the clawmem running on this data dir, or the one
--nats-url names (a cluster). It listens on ui.listen (default 127.0.0.1:7434). Off loopback it
needs ui.adminToken (and takes ui.readToken for read-only users): a login form sets a session
cookie. clawmem up serves the same console itself; run this for a cluster, or a second address.`,
		Example: "  clawmem ui\n  clawmem ui --listen 127.0.0.1:8080\n  clawmem ui --nats-url nats://nats.internal:4222",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			if listen != "" {
				cfg.UI.Listen = listen
			}
			if cfg.UI.Listen == "off" {
				return fmt.Errorf("ui.listen is off: give --listen host:port")
			}
			return node.Run(cmd.Context(), cfg, node.Options{NATSURL: a.natsURL, Roles: []string{node.RoleUI}, Log: a.logger(),
				Services: []node.Service{a.consoleService(cfg)}})
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address to serve on (default ui.listen)")
	return cmd
}

// consoleService serves the web console beside the roles: its memory
// operations go to the query service over the roles' connection, its
// pipeline operations over a connection of its own.
func (a *app) consoleService(cfg *config.Config) node.Service {
	return node.Service{Name: "console", Listen: cfg.UI.Listen, Run: func(ctx context.Context, nc *nats.Conn, natsURL string, ln net.Listener) error {
		var ui console.Config
		var err error
		ui.Listen = cfg.UI.Listen
		if ui.ReadToken, err = envsubst.Expand(cfg.UI.ReadToken); err != nil {
			return fmt.Errorf("ui.readToken: %w", err)
		}
		if ui.AdminToken, err = envsubst.Expand(cfg.UI.AdminToken); err != nil {
			return fmt.Errorf("ui.adminToken: %w", err)
		}
		p := client.NewNATSPipeline(func() (*nats.Conn, error) { return node.Connect(natsURL, cfg, "clawmem-console") })
		defer p.Close()
		log := a.logger()
		opts := console.Options{
			Client:     client.NewNATS(nc),
			Pipeline:   p,
			ConfigFile: &config.Options{Path: a.configPath, DataDir: a.dataDir},
			StartupChecks: func() ([]console.StartupCheck, time.Time, bool) {
				rep, ok := node.ReadStartupReport(cfg.DataDir)
				var out []console.StartupCheck
				for _, c := range rep.Checks {
					out = append(out, console.StartupCheck{Name: c.Name, OK: c.OK, Detail: c.Detail, Fix: c.Fix})
				}
				return out, rep.Time, ok
			},
			Distill: func(ctx context.Context, agent, session string) (workers.CursorReport, error) {
				d, err := node.NewDistiller(cfg)
				if err != nil {
					return workers.CursorReport{}, err
				}
				return p.Distill(ctx, d, node.CursorConfig(cfg), workers.CursorRun{Agent: agent, Session: session, IgnoreIdle: true}, log)
			},
			Log: log,
		}
		srv, err := console.New(ui, opts)
		if err != nil {
			ln.Close()
			return err
		}
		return srv.Serve(ctx, ln)
	}}
}
