package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/schemas"
)

func (a *app) rebuildCmd() *cobra.Command {
	var into string
	cmd := &cobra.Command{
		Use:   "rebuild --into DIR",
		Short: "Build a store from the memory log, the replicated source of truth",
		Long: `The store worker publishes every committed change of a memory, with its vector, to the memory
log (the stream ` + schemas.StreamMemories + `: one message per memory, replicated on a cluster).
rebuild applies the log to the store in DIR: a new directory gets every memory, a store rebuilt
before is brought up to date. To use it, stop clawmem and point dbPath at it. It talks to the
running clawmem's NATS; when none runs, to the data dir's NATS store.`,
		Example: "  clawmem rebuild --into ~/.clawmem/store-rebuilt",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if into == "" {
				return errors.New("give --into DIR: the store to build (a new directory, or one rebuilt before)")
			}
			t, err := a.Target("clawmem-cli")
			if err != nil {
				return err
			}
			if client.SameDir(into, t.Store().DBPath) {
				return fmt.Errorf("--into %s is the store in use: rebuild into another directory, then point dbPath at it", into)
			}
			dim, err := storeopen.Dimensions(t.Config)
			if err != nil {
				return err
			}
			p := pipeline(t, t.Running())
			defer p.Close()
			rep, err := p.Rebuild(cmd.Context(), into, dim)
			if err != nil {
				return storeLocked(err, into)
			}
			return a.Emit(rep, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "rebuilt %s from the memory log: %d memories (%d entries applied, log at sequence %d, %d bytes)\n",
					into, rep.Memories, rep.Entries, rep.LogSeq, rep.LogBytes)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&into, "into", "", "the store directory to build")
	return cmd
}
