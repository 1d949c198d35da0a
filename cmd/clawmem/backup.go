package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers"
)

// backupRequestTimeout bounds `backup now` against a running instance: a
// large store takes longer than an ordinary request.
const backupRequestTimeout = 10 * time.Minute

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
			cfg, err := a.config()
			if err != nil {
				return err
			}
			var res workers.BackupResult
			if a.remote(cfg) {
				if dir != "" {
					return errors.New("--dir applies to direct backups only; the running clawmem writes to its jobs.backup.dir")
				}
				res, err = a.requestBackup(cmd.Context(), cfg)
			} else {
				res, err = a.directBackup(cmd.Context(), cfg, dir)
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				if err := a.printJSON(res); err != nil {
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

// remote reports whether commands go to a running instance over NATS, as
// connect decides: not with --db, else when a NATS is configured or the
// data dir's clawmem up runs.
func (a *app) remote(cfg *config.Config) bool {
	if a.dbDir != "" {
		return false
	}
	return a.running(cfg)
}

func (a *app) requestBackup(ctx context.Context, cfg *config.Config) (workers.BackupResult, error) {
	nc, err := a.dialNATS(cfg, "clawmem-cli")
	if err != nil {
		return workers.BackupResult{}, err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, backupRequestTimeout)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, schemas.AdminSubject(schemas.OpBackup), []byte(`{}`))
	if errors.Is(err, nats.ErrNoResponders) {
		return workers.BackupResult{}, fmt.Errorf("no clawmem store worker answers backup requests on %s: is `clawmem up` (or `clawmem worker store`) running?", nc.ConnectedUrl())
	}
	if err != nil {
		return workers.BackupResult{}, fmt.Errorf("backup request: %w", err)
	}
	var reply struct {
		schemas.ToolResult
		Details json.RawMessage `json:"details"`
	}
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return workers.BackupResult{}, fmt.Errorf("bad reply to the backup request: %w", err)
	}
	if reply.IsError {
		text := "backup failed"
		if len(reply.Content) > 0 {
			text = reply.Content[0].Text
		}
		return workers.BackupResult{}, errors.New(text)
	}
	var res workers.BackupResult
	if err := json.Unmarshal(reply.Details, &res); err != nil {
		return res, fmt.Errorf("bad reply to the backup request: %w", err)
	}
	return res, nil
}

func (a *app) directBackup(ctx context.Context, cfg *config.Config, dir string) (workers.BackupResult, error) {
	st, err := a.openStore(ctx, cfg)
	if err != nil {
		return workers.BackupResult{}, err
	}
	defer st.Close()
	job, err := workers.NewBackupJob(st, nil, node.BackupConfig(cfg, dir), slog.New(slog.DiscardHandler))
	if err != nil {
		return workers.BackupResult{}, err
	}
	return job.RunOnce(ctx)
}

// openStore opens the store (--db, else dbPath) directly, with the
// configured embedder's dimensions.
func (a *app) openStore(ctx context.Context, cfg *config.Config) (*sqlitestore.Store, error) {
	emb, err := embed.New(cfg.EmbedConfig())
	if err != nil {
		return nil, fmt.Errorf("embedding: %w", err)
	}
	dir := cfg.DBPath
	if a.dbDir != "" {
		dir = a.dbDir
	}
	st, err := sqlitestore.Open(ctx, dir, sqlitestore.Options{Dimensions: emb.Dimensions(), Index: cfg.IndexOptions()})
	if errors.Is(err, engine.ErrLocked) {
		return nil, fmt.Errorf("%w\n(a clawmem is running on %s: stop it, or use another --db directory)", err, dir)
	}
	return st, err
}

// backupJetStream reaches the NATS that holds the backup bucket: the
// running instance's or the configured one; with neither, the data dir's
// embedded server, started for this command. It returns nil when there is
// none (clawmem never ran here).
func (a *app) backupJetStream(cfg *config.Config) (jetstream.JetStream, func(), error) {
	if a.running(cfg) {
		return a.jetStream()
	}
	storeDir := filepath.Join(cfg.DataDir, "nats")
	if _, err := os.Stat(storeDir); err != nil {
		return nil, func() {}, nil
	}
	srv, err := natsembed.Start(natsembed.Options{StoreDir: storeDir, Port: -1})
	if err != nil {
		return nil, nil, err
	}
	nc, err := srv.Connect()
	if err != nil {
		srv.Stop()
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		srv.Stop()
		return nil, nil, err
	}
	return js, func() { nc.Close(); srv.Stop() }, nil
}

func (a *app) backupListCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the backup files and their Object Store copies",
		Example: "  clawmem backup list\n  clawmem backup list --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			if dir == "" {
				dir = cfg.Jobs.Backup.Dir
			}
			local, err := workers.ListBackups(dir, true)
			if err != nil {
				return err
			}
			out := struct {
				Dir              string               `json:"dir"`
				Local            []workers.BackupFile `json:"local"`
				ObjectStore      []workers.BackupFile `json:"objectStore"`
				ObjectStoreError string               `json:"objectStoreError,omitempty"`
			}{Dir: dir, Local: local}
			js, closeNC, err := a.backupJetStream(cfg)
			switch {
			case err != nil:
				out.ObjectStoreError = err.Error()
			case js == nil:
				out.ObjectStoreError = "no NATS data in " + cfg.DataDir + " (clawmem up never ran here)"
			default:
				defer closeNC()
				if out.ObjectStore, err = workers.ListBackupObjects(cmd.Context(), js); err != nil {
					out.ObjectStoreError = err.Error()
				}
			}
			if out.Local == nil {
				out.Local = []workers.BackupFile{}
			}
			if out.ObjectStore == nil {
				out.ObjectStore = []workers.BackupFile{}
			}
			if a.jsonOut {
				return a.printJSON(out)
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WHERE\tNAME\tSIZE\tDATE\tWRITTEN\tMEMORIES")
			for _, f := range out.Local {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", dir, f.Name, byteSize(f.Size), f.Date, f.Time.Local().Format(time.DateTime), f.Count)
			}
			for _, f := range out.ObjectStore {
				count := "?"
				if f.Count >= 0 {
					count = fmt.Sprint(f.Count)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", "nats:"+schemas.BucketBackups, f.Name, byteSize(f.Size), f.Date, f.Time.Local().Format(time.DateTime), count)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(out.Local)+len(out.ObjectStore) == 0 {
				fmt.Fprintln(a.stdout, "no backups yet")
			}
			if out.ObjectStoreError != "" {
				fmt.Fprintln(a.stdout, "Object Store:", out.ObjectStoreError)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "backup directory (default jobs.backup.dir)")
	return cmd
}

func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
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
vectors of its dimension. Prints the expected and restored counts; exits 1 when they differ.`,
		Example: "  clawmem backup restore memory-backup-2026-03-01.jsonl --db ~/.clawmem/store-restored\n" +
			"  clawmem backup restore /mnt/backups/memory-snapshot-2026-03-01.jsonl",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			if dir == "" {
				dir = cfg.Jobs.Backup.Dir
			}
			src, source, err := a.openBackup(cmd.Context(), cfg, args[0], dir)
			if err != nil {
				return err
			}
			defer src.Close()
			emb, err := embed.New(cfg.EmbedConfig())
			if err != nil {
				return fmt.Errorf("embedding: %w", err)
			}
			st, err := a.openStore(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			progress, finish := a.progressBar("restoring memories")
			rep, err := workers.Restore(cmd.Context(), st, emb, src, progress)
			finish()
			if err != nil {
				return err
			}
			ok := rep.Restored == rep.Expected
			if a.jsonOut {
				if err := a.printJSON(struct {
					Source string `json:"source"`
					OK     bool   `json:"ok"`
					workers.RestoreReport
				}{source, ok, rep}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "restored %s\nexpected %d memories, restored %d", source, rep.Expected, rep.Restored)
				fmt.Fprintf(a.stdout, " (%d vectors from the file, %d embedded", rep.VectorsKept, rep.Embedded)
				if rep.Duplicates > 0 {
					fmt.Fprintf(a.stdout, ", %d repeated ids skipped", rep.Duplicates)
				}
				fmt.Fprintln(a.stdout, ")")
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

// openBackup finds what arg names: a file, a file in the backup
// directory, or an Object Store copy. It returns the reader and a
// description of where it came from.
func (a *app) openBackup(ctx context.Context, cfg *config.Config, arg, dir string) (io.ReadCloser, string, error) {
	bare := filepath.Base(arg) == arg
	paths := []string{arg}
	if bare {
		paths = append(paths, filepath.Join(dir, arg))
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err == nil {
			return f, p, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, "", err
		}
	}
	if !bare {
		return nil, "", fmt.Errorf("%s: no such file", arg)
	}
	js, closeNC, err := a.backupJetStream(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("%s is not a file here and the Object Store is unreachable: %w", arg, err)
	}
	if js == nil {
		return nil, "", fmt.Errorf("%s: no such file in . or %s, and no Object Store here", arg, dir)
	}
	obs, err := js.ObjectStore(ctx, schemas.BucketBackups)
	if err == nil {
		var r jetstream.ObjectResult
		if r, err = obs.Get(ctx, arg); err == nil {
			return readCloser{r, func() error { err := r.Close(); closeNC(); return err }}, "nats:" + schemas.BucketBackups + "/" + arg, nil
		}
	}
	closeNC()
	if errors.Is(err, jetstream.ErrObjectNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, "", fmt.Errorf("%s: no such file in . or %s, nor in the Object Store %s (see `clawmem backup list`)", arg, dir, schemas.BucketBackups)
	}
	return nil, "", fmt.Errorf("object store: %w", err)
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// progressBar shows progress on a terminal (not with --json); elsewhere
// both functions do nothing.
func (a *app) progressBar(desc string) (progress func(done, total int), finish func()) {
	f, ok := a.stderr.(*os.File)
	if !ok || a.jsonOut || !isatty.IsTerminal(f.Fd()) {
		return nil, func() {}
	}
	var bar *progressbar.ProgressBar
	return func(done, total int) {
			if bar == nil {
				bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(desc),
					progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
			}
			_ = bar.Set(done)
		}, func() {
			if bar != nil {
				_ = bar.Finish()
			}
		}
}
