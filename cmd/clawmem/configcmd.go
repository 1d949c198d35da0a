package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/clawmem/clawmem/config"
)

func (a *app) configCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check the configuration, or show the one in effect",
		Long: `The config file is JSON, JSON5 or YAML (by its extension) with the keys of memory-lancedb-pro's
config object plus clawmem's own. An OpenClaw document ({"plugins":{"entries":{...}}}) works too: the
config of its clawmem entry is used, else memory-lancedb-pro's, else memory-lancedb's (a clawmem entry
with only the OpenClaw plugin's settings gives way to a seed plugin's entry). ${VAR} references in
string values are resolved from the environment.`,
	}
	cmd.AddCommand(a.configCheckCmd(), a.configShowCmd())
	return cmd
}

func (a *app) configCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Load and check the configuration: ok and any warnings, or every error",
		Long: `Loads the config file (--config, else $CLAWMEM_CONFIG, else config.json, .json5, .yaml or .yml in
the data dir), resolves its ${VAR} references and checks every key and value: unknown keys (with the
closest valid one), wrong types, values out of range, unset variables. Exit code 1 on errors.`,
		Example: "  clawmem config check\n  clawmem config check --config ~/.openclaw/openclaw.json --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep := config.Check(config.Options{Path: a.configPath, DataDir: a.dataDir})
			if a.jsonOut {
				if err := a.PrintJSON(rep); err != nil {
					return err
				}
			} else {
				rep.WriteText(a.stdout)
			}
			if !rep.OK {
				return errSilent{fmt.Errorf("%d config error(s)", len(rep.Errors))}
			}
			return nil
		},
	}
}

func (a *app) configShowCmd() *cobra.Command {
	var (
		resolved bool
		format   string
	)
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the configuration in effect: every key, defaults applied",
		Long: `Prints the configuration in effect, defaults applied, as JSON (or YAML with --format yaml).
Values written with ${VAR} references are shown as written, and may name unset variables; with
--resolved they are resolved (an unset one is an error). Secrets — API keys, tokens, inline
credentials, storageOptions — are masked either way ("jina_****abcd").`,
		Example: "  clawmem config show\n  clawmem config show --resolved --format yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "json" && format != "yaml" {
				return fmt.Errorf("--format is %q: want json or yaml", format)
			}
			f, err := config.Read(config.Options{Path: a.configPath, DataDir: a.dataDir, KeepUnset: !resolved})
			if err != nil {
				return err
			}
			out, err := f.Effective(resolved)
			if err != nil {
				return err
			}
			for _, w := range f.Warnings {
				fmt.Fprintln(a.stderr, "warning:", w)
			}
			if format == "json" || a.jsonOut {
				return a.PrintJSON(out)
			}
			enc := yaml.NewEncoder(a.stdout)
			enc.SetIndent(2)
			if err := enc.Encode(out); err != nil {
				return err
			}
			return enc.Close()
		},
	}
	cmd.Flags().BoolVar(&resolved, "resolved", false, "resolve ${VAR} references (secrets stay masked)")
	cmd.Flags().StringVar(&format, "format", "json", "output format: json or yaml")
	return cmd
}
