package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/node"
)

func (a *app) upCmd() *cobra.Command {
	var listen, uiListen string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run everything: NATS (embedded), store, capture, distill, query service, hook ingest and the session watcher",
		Long: `Runs the whole pipeline in one process. With no --nats-url it embeds a NATS server with
JetStream under <data-dir>/nats, listening on 127.0.0.1:4244; other clawmem commands using the
same data dir find it. The hook ingest endpoint listens on 127.0.0.1:7433 (POST /v1/hooks/{kind}
with "Authorization: Bearer" and the token in <data-dir>/auth/ingest.token, GET /healthz, GET
/metrics, and the HTTP API for apps, GET /v1/openapi.json; --listen or ingest.addr moves it). Session files under OpenClaw's state dir
(watch.stateDir) are followed into the transcript stream, ended sessions are distilled into
lessons, and the cursor distiller runs on distill.schedule. The web console listens on
127.0.0.1:7434 (--ui-listen or ui.listen; "off" serves none); sign in with the one-time link
clawmem ui login prints. Every port is bound before anything starts: a taken one is the one
error. Other commands on the data dir wait while it starts (up to 30 s). SIGINT/SIGTERM drain
in-flight work and stop cleanly.`,
		Example: "  clawmem up\n  clawmem up --data-dir /srv/clawmem\n  clawmem up --listen 127.0.0.1:8433 --ui-listen 127.0.0.1:8434\n" +
			"  clawmem up --nats-url nats://nats.internal:4222",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			if listen != "" || uiListen != "" {
				if listen != "" {
					cfg.Ingest.Addr = listen
				}
				if uiListen != "" {
					cfg.UI.Listen = uiListen
				}
				// The flags' addresses get the checks the config file's get.
				if err := cfg.Validate(); err != nil {
					return err
				}
			}
			var services []node.Service
			if cfg.UI.Listen != "off" {
				services = append(services, a.consoleService(cfg))
			}
			err = node.Run(cmd.Context(), cfg, node.Options{NATSURL: a.natsURL, Embedded: true, Log: a.logger(), Services: services,
				Roles: []string{node.RoleStore, node.RoleQuery, node.RoleCapture, node.RoleIngest, node.RoleDistill, node.RoleWatch}})
			return explainListenError(err)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "host:port of the hook ingest endpoint (default ingest.addr, else 127.0.0.1:7433)")
	cmd.Flags().StringVar(&uiListen, "ui-listen", "", "host:port of the web console, or off (default ui.listen, else 127.0.0.1:7434)")
	return cmd
}

// explainListenError turns a port up could not bind into one line a user
// can act on: which address, for what, and the flag and config key that
// choose another. Another program on the default port is the usual cause.
func explainListenError(err error) error {
	var le *node.ListenError
	if !errors.As(err, &le) {
		return err
	}
	what, flag, key := "the hook ingest endpoint", "--listen", "ingest.addr"
	if le.Name == "console" {
		what, flag, key = "the web console", "--ui-listen", "ui.listen"
	}
	cause := le.Err
	if op, ok := cause.(*net.OpError); ok {
		cause = op.Err // "bind: address already in use", without the address again
	}
	return fmt.Errorf("cannot listen on %s for %s (%v): choose another address with %s or the config key %s", le.Addr, what, cause, flag, key)
}

func (a *app) workerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker capture|store|query|ingest|distill|watch",
		Short: "Run one role of the pipeline against an external NATS",
		Long: `Runs a single role, for deployments that scale roles apart. The store role is the writer: it
owns the store, publishes every change to the memory log and also serves queries; run one.
query runs a query replica: its own copy of the memories (at dbPath), built from the memory log
and kept up with it, answering reads and forwarding writes to the writer; run as many as the
load needs. capture, distill and ingest are stateless: run as many as you like (distill also
runs the scheduled cursor distiller; its cursors are compare-and-set, so several are safe).
watch follows one machine's OpenClaw session files: run one per machine.`,
		Example:   "  clawmem worker store --nats-url nats://nats:4222\n  clawmem worker capture --nats-url nats://nats:4222",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{node.RoleCapture, node.RoleStore, node.RoleQuery, node.RoleIngest, node.RoleDistill, node.RoleWatch},
		RunE: func(cmd *cobra.Command, args []string) error {
			roles := []string{args[0]}
			switch args[0] {
			case node.RoleStore:
				roles = []string{node.RoleStore, node.RoleQuery}
			case node.RoleQuery:
				roles = []string{node.RoleReplica}
			case node.RoleCapture, node.RoleIngest, node.RoleDistill, node.RoleWatch:
			default:
				return fmt.Errorf("unknown role %q: want capture, store, query, ingest, distill or watch", args[0])
			}
			return a.serve(cmd.Context(), a.natsURL, roles, false)
		},
	}
	return cmd
}

// serve runs roles (see node.Run) until ctx ends.
func (a *app) serve(ctx context.Context, natsURL string, roles []string, embedded bool) error {
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	return node.Run(ctx, cfg, node.Options{NATSURL: natsURL, Roles: roles, Embedded: embedded, Log: a.logger()})
}

func (a *app) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
