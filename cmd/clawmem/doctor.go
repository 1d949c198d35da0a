package main

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/node"
)

func (a *app) doctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the configuration, the embedder and the store",
		Long: `Checks that the config loads, that the embedder answers (embedding the word "test"),
and that the store opens with matching vector dimensions. Prints what is wrong and how to fix it.`,
		Example: "  clawmem doctor\n  clawmem doctor --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			checks := a.doctor(cmd.Context())
			failed := 0
			for _, c := range checks {
				if !c.OK {
					failed++
				}
			}
			if a.jsonOut {
				if err := a.printJSON(map[string]any{"ok": failed == 0, "checks": checks}); err != nil {
					return err
				}
			} else {
				for _, c := range checks {
					mark := "ok  "
					if !c.OK {
						mark = "FAIL"
					}
					fmt.Fprintf(a.stdout, "[%s] %-9s %s\n", mark, c.Name, c.Detail)
					if c.Fix != "" {
						fmt.Fprintf(a.stdout, "           fix: %s\n", c.Fix)
					}
				}
			}
			if failed > 0 {
				return errSilent{fmt.Errorf("%d check(s) failed", failed)}
			}
			return nil
		},
	}
}

func (a *app) doctor(ctx context.Context) []node.Check {
	cfg, err := a.config()
	if err != nil {
		return []node.Check{{Name: "config", Detail: err.Error(), Fix: "correct the config file, or run without one to use the defaults"}}
	}
	return node.Doctor(ctx, cfg, func() (*nats.Conn, error) { return a.dialNATS(cfg, "clawmem-doctor") })
}
