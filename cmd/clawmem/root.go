package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/cmd/clawmem/internal/bench"
	"github.com/clawmem/clawmem/cmd/clawmem/internal/bulk"
	"github.com/clawmem/clawmem/cmd/clawmem/internal/chaos"
	"github.com/clawmem/clawmem/config"
)

// Version is set at build time with -ldflags "-X main.Version=...".
var Version = "0.1.0-dev"

// app holds what every command shares: flags and the loaded config.
type app struct {
	configPath string
	dataDir    string
	jsonOut    bool
	natsURL    string
	dbDir      string
	stdout     io.Writer
	stderr     io.Writer
	// ctx is the running command's (set before it runs): waits outside a
	// command's own context end with it too.
	ctx context.Context
}

func (a *app) Config() (*config.Config, error) {
	return config.Load(a.configPath, a.dataDir)
}

// PrintJSON writes v as indented JSON to stdout.
func (a *app) PrintJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func run(args []string) int {
	a := &app{stdout: os.Stdout, stderr: os.Stderr}
	root := a.rootCmd()
	root.SetArgs(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		var quiet errSilent
		if !errors.As(err, &quiet) {
			fmt.Fprintln(a.stderr, "clawmem:", err)
		}
		return 1
	}
	return 0
}

// errSilent is a failure the command already reported.
type errSilent struct{ error }

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "clawmem",
		Short:         "Long-term memory for AI agents",
		Long:          "clawmem captures, distils and recalls long-term memories for AI agents (OpenClaw first).",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			a.ctx = cmd.Context()
		},
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&a.configPath, "config", "", "config file (default $CLAWMEM_CONFIG, else <data-dir>/config.json if present)")
	pf.StringVar(&a.dataDir, "data-dir", "", "data directory (default $CLAWMEM_DATA_DIR, else ~/.clawmem)")
	pf.BoolVar(&a.jsonOut, "json", false, "machine-readable JSON output")
	pf.StringVar(&a.natsURL, "nats-url", "", "NATS server of a running clawmem (default: the config's nats.url, else the local \"clawmem up\")")
	pf.StringVar(&a.dbDir, "db", "", "work directly on this store directory (nothing may be running on it)")
	root.AddCommand(a.upCmd(), a.uiCmd(), chaos.Command(a), a.workerCmd(), a.publishCmd(), a.searchCmd(), a.contextCmd(), a.listCmd(), a.showCmd(), a.consolidateCmd(), a.statsCmd(), a.forgetCmd(),
		a.versionCmd(), a.doctorCmd(), bench.Command(a), a.distillCmd(), a.watchCmd(), a.configCmd(), a.backupCmd(), a.dlqCmd(), a.mcpCmd(),
		a.evalCmd(), a.rebuildCmd(), a.natsCmd(), a.statusCmd(), a.agentCmd())
	root.AddCommand(bulk.Commands(a)...)
	return root
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.jsonOut {
				return a.PrintJSON(map[string]string{"version": Version})
			}
			fmt.Fprintln(a.stdout, "clawmem", Version)
			return nil
		},
	}
}
