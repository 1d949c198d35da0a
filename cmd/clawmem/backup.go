package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/jobs"
)

func (a *app) backupCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Backups: write one now, list them, restore one into an empty store",
		Long: `The store worker writes memory-backup-YYYY-MM-DD.jsonl (one memory per line, no vectors; with
jobs.backup.withVectors also memory-snapshot-YYYY-MM-DD.jsonl with vectors) to jobs.backup.dir
(default <data-dir>/backups) a minute after start and then on jobs.backup.schedule (default
@daily), keeps the newest jobs.backup.keep (7) and copies each to the NATS Object Store bucket
` + schemas.BucketBackups + `.`,
	}
	cmd.AddCommand(a.backupNowCmd(), a.backupListCmd(), a.backupRestoreCmd())
	return cmd
}

func (a *app) backupNowCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "now",
		Short: "Write a backup now",
		Long: `Asks the running clawmem to write a backup now (it also copies it to the Object Store). With
--db, or when nothing runs, opens the store directly and writes the files only.`,
		Example: "  clawmem backup now\n  clawmem backup now --db /srv/clawmem/store --dir /mnt/backups",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := a.Target("clawmem-cli")
			if err != nil {
				return err
			}
			remote := t.Remote()
			if remote && dir != "" {
				return errors.New("--dir applies to direct backups only; the running clawmem writes to its jobs.backup.dir")
			}
			if dir != "" {
				t.Config.Jobs.Backup.Dir = dir
			}
			p := pipeline(t, remote)
			defer p.Close()
			res, err := p.BackupNow(cmd.Context())
			if err != nil {
				return storeLocked(err, t.Store().DBPath)
			}
			if a.jsonOut {
				if err := a.PrintJSON(res); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(a.stdout, res.Summary())
				for _, name := range res.Removed {
					fmt.Fprintln(a.stdout, "  removed old backup", name)
				}
			}
			if res.UploadError != "" {
				return errSilent{errors.New(res.UploadError)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "write to this directory (direct backups; default jobs.backup.dir)")
	return cmd
}

// storeLocked says what to do when the store at dir is locked.
func storeLocked(err error, dir string) error {
	if errors.Is(err, engine.ErrLocked) {
		return fmt.Errorf("%w\n(a clawmem is running on %s: stop it, or use another --db directory)", err, dir)
	}
	return err
}

func (a *app) backupListCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the backup files and their Object Store copies",
		Example: "  clawmem backup list\n  clawmem backup list --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := a.Target("clawmem-cli")
			if err != nil {
				return err
			}
			if dir == "" {
				dir = t.Config.Jobs.Backup.Dir
			}
			p := pipeline(t, t.Running())
			defer p.Close()
			out, err := p.Backups(cmd.Context(), dir)
			if err != nil {
				return err
			}
			return a.Emit(out, out.WriteText)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "backup directory (default jobs.backup.dir)")
	return cmd
}

func (a *app) backupRestoreCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "restore FILE|NAME",
		Short: "Load a backup into an empty store and verify the count",
		Long: `Loads a backup or snapshot into the store (--db DIR, else dbPath), which must be empty: stop
clawmem first, or restore into a new directory and point dbPath at it. FILE is a path; NAME a
file in the backup directory or, failing that, an Object Store copy. Ids, timestamps, scopes and
metadata are kept; texts are embedded with the configured embedder unless the file carries
vectors of its dimension. Prints the expected and restored counts (superseded and archived
memories included, as the backup counts them); exits 1 when they differ.`,
		Example: "  clawmem backup restore memory-backup-2026-03-01.jsonl --db ~/.clawmem/store-restored\n" +
			"  clawmem backup restore /mnt/backups/memory-snapshot-2026-03-01.jsonl",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.Target("clawmem-cli")
			if err != nil {
				return err
			}
			if dir == "" {
				dir = t.Config.Jobs.Backup.Dir
			}
			p := pipeline(t, t.Running())
			defer p.Close()
			src, source, err := p.OpenBackup(cmd.Context(), args[0], dir)
			if err != nil {
				return err
			}
			defer src.Close()
			progress, finish := a.progressBar("restoring memories")
			rep, err := client.Restore(cmd.Context(), t.Store(), src, progress)
			finish()
			if err != nil {
				return storeLocked(err, t.Store().DBPath)
			}
			ok := rep.Restored == rep.Expected
			if a.jsonOut {
				if err := a.PrintJSON(struct {
					Source string `json:"source"`
					OK     bool   `json:"ok"`
					jobs.RestoreReport
				}{source, ok, rep}); err != nil {
					return err
				}
			} else {
				rep.WriteText(a.stdout, source)
			}
			if !ok {
				return fmt.Errorf("count mismatch: expected %d memories, the store holds %d", rep.Expected, rep.Restored)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "backup directory NAME is looked up in (default jobs.backup.dir)")
	return cmd
}
