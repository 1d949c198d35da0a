package main

import (
	"context"
	"fmt"

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
			failed := checks.Failed()
			if err := a.Emit(map[string]any{"ok": failed == 0, "checks": checks}, checks.WriteText); err != nil {
				return err
			}
			if failed > 0 {
				return errSilent{fmt.Errorf("%d check(s) failed", failed)}
			}
			return nil
		},
	}
}

func (a *app) doctor(ctx context.Context) node.Checks {
	t, err := a.Target("clawmem-doctor")
	if err != nil {
		return node.Checks{{Name: "config", Detail: err.Error(), Fix: "correct the config file, or run without one to use the defaults"}}
	}
	return node.Doctor(ctx, t.Config, t.Dial)
}
