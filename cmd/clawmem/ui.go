package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/console"
	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/internal/instance"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/workers/lessons"
)

func (a *app) uiCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the web console against a running clawmem (clawmem up serves it too)",
		Long: `Serves the web console — overview, memories, search with explanations, dead letters,
distillation and configuration — against the clawmem running on this data dir, or the one
--nats-url names (a cluster). It listens on ui.listen (default 127.0.0.1:7434). Every visitor logs
in: clawmem ui login prints a one-time sign-in link, or the login form takes the admin token
(ui.adminToken, else the data dir's auth/console.token) or ui.readToken (read-only). Off loopback
it needs ui.adminToken. clawmem up serves the same console itself; run this for a cluster, or a
second address.`,
		Example: "  clawmem ui\n  clawmem ui --listen 127.0.0.1:8080\n  clawmem ui --nats-url nats://nats.internal:4222",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			if listen != "" {
				cfg.UI.Listen = listen
			}
			if cfg.UI.Listen == "off" {
				return fmt.Errorf("ui.listen is off: give --listen host:port")
			}
			// Before anything binds the address, not after.
			if err := config.CheckUIListen(cfg.UI.Listen, cfg.UI.AdminToken); err != nil {
				return err
			}
			return node.Run(cmd.Context(), cfg, node.Options{NATSURL: a.natsURL, Roles: []string{node.RoleUI}, Log: a.logger(),
				Services: []node.Service{a.consoleService(cfg)}})
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address to serve on (default ui.listen)")
	cmd.AddCommand(a.uiLoginCmd())
	return cmd
}

func (a *app) uiLoginCmd() *cobra.Command {
	var base string
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Print a one-time link that signs a browser in to the web console",
		Long: `Prints a link to the web console that signs the browser that opens it in as admin. The link
works once, within ` + strconv.Itoa(int(console.SignInTTL.Minutes())) + ` minutes; it is signed with the console's admin token (ui.adminToken, else the
data dir's auth/console.token), which itself never appears in it, so only the data dir's owner can
make one. The console is the one clawmem up runs on this data dir, else the one on ui.listen;
--url names another (the address clawmem ui --listen serves).`,
		Example: "  clawmem ui login\n  xdg-open \"$(clawmem ui login)\"\n  clawmem ui login --url http://127.0.0.1:8080",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			token, err := console.AdminToken(cfg, false)
			if err != nil {
				return err
			}
			if base == "" {
				if info, ok := instance.ReadRunInfo(cfg.DataDir); ok && info.URLs["console"] != "" {
					base = info.URLs["console"]
				} else if cfg.UI.Listen != "off" {
					base = "http://" + cfg.UI.Listen
				} else {
					return errors.New("no console on this data dir (ui.listen is off and clawmem up serves none): give --url")
				}
			}
			u, err := url.Parse(base)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("--url %q: want the console's http://host:port", base)
			}
			u.Path, u.RawQuery, u.Fragment = "/login", url.Values{"code": {console.SignInCode(token, time.Now())}}.Encode(), ""
			fmt.Fprintln(a.stdout, u.String())
			fmt.Fprintf(a.stderr, "Open it within %d minutes; it works once.\n", int(console.SignInTTL.Minutes()))
			return nil
		},
	}
	cmd.Flags().StringVar(&base, "url", "", "the console's URL (default: the running clawmem up's, else http://<ui.listen>)")
	return cmd
}

// consoleService is the web console beside the roles, showing this
// command line's configuration file.
func (a *app) consoleService(cfg *config.Config) node.Service {
	return consoleService(cfg, &config.Options{Path: a.configPath, DataDir: a.dataDir}, a.logger())
}

// consoleService serves the console beside a node's roles (clawmem up,
// clawmem ui): its memory operations go to the query service over the
// roles' connection, its pipeline operations over a connection of its own.
// file is the configuration file the console's configuration page reads.
func consoleService(cfg *config.Config, file *config.Options, log *slog.Logger) node.Service {
	return node.Service{Name: "console", Listen: cfg.UI.Listen, Run: func(ctx context.Context, nc *nats.Conn, natsURL string, ln net.Listener) error {
		ui := console.Config{Listen: cfg.UI.Listen, AllowedHosts: cfg.UI.AllowedHosts}
		var err error
		if ui.ReadToken, err = envsubst.Expand(cfg.UI.ReadToken); err != nil {
			ln.Close()
			return fmt.Errorf("ui.readToken: %w", err)
		}
		if ui.AdminToken, err = console.AdminToken(cfg, true); err != nil {
			ln.Close()
			return err
		}
		p := client.NewNATSPipeline(func() (*nats.Conn, error) { return instance.Connect(natsURL, cfg, "clawmem-console") })
		defer p.Close()
		opts := console.Options{
			Client:        client.NewNATS(nc),
			Pipeline:      p,
			ConfigFile:    file,
			StartupChecks: func() ([]console.StartupCheck, time.Time, bool) { return startupChecks(cfg.DataDir) },
			Distill: func(ctx context.Context, agent, session string) (lessons.TranscriptReport, error) {
				d, err := node.NewDistiller(cfg)
				if err != nil {
					return lessons.TranscriptReport{}, err
				}
				return p.Distill(ctx, d, node.TranscriptConfig(cfg), lessons.TranscriptRun{Agent: agent, Session: session, IgnoreIdle: true}, log)
			},
			Log: log,
		}
		srv, err := console.New(ui, opts)
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
func startupChecks(dataDir string) ([]console.StartupCheck, time.Time, bool) {
	rep, ok := node.ReadStartupReport(dataDir)
	var out []console.StartupCheck
	for _, c := range rep.Checks {
		out = append(out, console.StartupCheck{Name: c.Name, OK: c.OK, Detail: c.Detail, Fix: c.Fix})
	}
	return out, rep.Time, ok
}
