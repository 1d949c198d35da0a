// Package bulk holds the bulk commands — export, import, delete-bulk,
// reembed and migrate — which stream memories between files, stores and a
// running clawmem. They work on the store directly (--db, or the data
// dir's store when nothing runs), and through the running instance's
// admin endpoints when one runs; what they do is client's (client.Export,
// client.Import, client.Migrate, ...), and this package only binds it to
// flags and prints it.
package bulk

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/schemas"
)

// CLI is what the bulk commands take from clawmem's command line: the
// target its global flags name, and its way of printing.
type CLI interface {
	Config() (*config.Config, error)
	// Target is who the commands talk to (see client.Target), named name
	// on NATS.
	Target(name string) (client.Target, error)
	// DB is the store directory --db names, if any.
	DB() string
	JSON() bool
	Stdout() io.Writer
	PrintJSON(v any) error
	// Silent marks a failure the command has already reported, so that
	// it exits 1 without printing err again.
	Silent(err error) error
	// Do runs one operation and prints its reply (see clawmem's other
	// operation commands).
	Do(cmd *cobra.Command, op, agent string, req any, render func(schemas.ToolResult) error) error
	// Terminal reports whether progress bars are drawn; NewBar draws one.
	Terminal() bool
	NewBar(desc string, total int64, bytes bool) *progressbar.ProgressBar
}

// Commands are the bulk commands, for the root command to add.
func Commands(cli CLI) []*cobra.Command {
	c := commands{cli}
	return []*cobra.Command{c.exportCmd(), c.importCmd(), c.deleteBulkCmd(), c.reembedCmd(), c.migrateCmd()}
}

type commands struct{ CLI }

// bulkTarget finds the store the bulk commands work on (see
// client.Target): --db's store, a running clawmem, else the data dir's
// store, created if absent. exportOnly opens a local store without the
// engine, adopting whatever dimension it has, so that a store can still be
// exported after the embedding model changed.
func (c commands) bulkTarget(ctx context.Context, exportOnly bool) (client.Bulk, error) {
	t, err := c.Target("clawmem-cli")
	if err != nil {
		return nil, err
	}
	return t.Bulk(ctx, exportOnly)
}

// bulkProgress draws a bulk operation's progress (client.Progress) as a
// bar on stderr when it is a terminal and the output is not --json; nil
// otherwise. desc names the operation.
func (c commands) bulkProgress(desc string) func(client.Progress) {
	if !c.Terminal() {
		return nil
	}
	var bar *progressbar.ProgressBar
	return func(p client.Progress) {
		if bar == nil {
			bar = c.NewBar(desc, p.Total, p.Bytes)
		}
		if r := p.Report; r != nil {
			bar.Describe(fmt.Sprintf("%s: %d imported, %d skipped, %d failed", desc, r.Imported, r.Skipped, r.Failed))
		}
		_ = bar.Set64(p.Done)
		if p.Final {
			_ = bar.Finish()
			bar = nil // the next operation (migrate's next source) gets a bar of its own
		}
	}
}

// ---- export ----

func (c commands) exportCmd() *cobra.Command {
	var (
		scope, output, format string
		vectors               bool
	)
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write every memory to a file: JSONL (default) or the plugin's JSON export document",
		Long: `Streams every memory (or one scope's) out of the store, with no row limit.
JSONL (the default, also the daily backup's format) has one memory per line:
{id,text,category,scope,importance,timestamp,metadata}; --format json writes
memory-lancedb-pro's export document {version,exportedAt,filters,memories,count}.
--with-vectors adds each vector, so that an import into a store with the same
embedding model needs no re-embedding. With --output the file appears complete
or not at all.`,
		Example: "  clawmem export --output memories.jsonl\n  clawmem export --scope agent:main --format json --output main.json\n" +
			"  clawmem export --with-vectors | gzip > snapshot.jsonl.gz",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := portable.ParseFormat(format)
			if err != nil {
				return err
			}
			if scope != "" {
				if err := schemas.ValidateScope(scope); err != nil {
					return err
				}
			}
			t, err := c.bulkTarget(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer t.Close()
			o := client.ExportOptions{Scope: scope, Format: f, WithVectors: vectors, Progress: c.bulkProgress("exporting")}
			if output == "" {
				_, err := client.Export(cmd.Context(), t, c.Stdout(), o)
				return err
			}
			n, err := client.ExportFile(cmd.Context(), t, output, o)
			if err != nil {
				return err
			}
			if c.JSON() {
				return c.PrintJSON(map[string]any{"exported": n, "output": output, "format": f, "withVectors": vectors})
			}
			fmt.Fprintf(c.Stdout(), "exported %d memories from %s to %s\n", n, t.Where(), output)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&scope, "scope", "", "only this scope")
	fl.StringVarP(&output, "output", "o", "", "file to write (default stdout)")
	fl.StringVar(&format, "format", "jsonl", "jsonl or json")
	fl.BoolVar(&vectors, "with-vectors", false, "include each memory's vector")
	return cmd
}

// ---- import ----

// maxListed bounds the rows of each kind a human-readable report names.
const maxListed = 50

// printImport reports an import; it returns a Silent error when rows failed or
// the import stopped early, so that the exit code says so.
func (c commands) printImport(out client.ImportOutcome, runErr error) error {
	if refused, ok := errors.AsType[client.ImportRefusedError](runErr); ok {
		return refused.Err
	}
	if c.JSON() {
		if err := c.PrintJSON(out); err != nil {
			return err
		}
	} else {
		out.WriteText(c.Stdout(), maxListed, " (--json lists every row)")
	}
	switch {
	case runErr != nil && c.JSON():
		return c.Silent(runErr)
	case runErr != nil:
		return fmt.Errorf("%w (rows written so far stay; rerun with --skip-existing to go on)", runErr)
	case out.Failed > 0:
		return c.Silent(fmt.Errorf("%d rows failed", out.Failed))
	}
	return nil
}

// importFlags binds the flags every importing command shares.
func importFlags(cmd *cobra.Command, o *client.ImportJob, batch int) {
	f := cmd.Flags()
	f.StringVar(&o.Options.Scope, "scope", "", "put every memory in this scope (default: each row's own, global when it has none)")
	f.BoolVar(&o.Options.DryRun, "dry-run", false, "read and check every row, write nothing")
	f.BoolVar(&o.SkipExisting, "skip-existing", false, "expect some ids to be stored already (resuming): skip them quietly")
	f.BoolVar(&o.Options.NoDedup, "no-dedup", false, "keep near-duplicates (a row is otherwise skipped at 0.95 similarity to a memory in its scope)")
	f.IntVar(&o.BatchSize, "batch-size", batch, "rows embedded and written together")
}

// checkImport refuses bad flags before anything is opened, and has the
// import's progress drawn as desc.
func (c commands) checkImport(o *client.ImportJob, desc string) error {
	if o.Options.Scope != "" {
		if err := schemas.ValidateScope(o.Options.Scope); err != nil {
			return err
		}
	}
	if o.BatchSize < 1 || o.BatchSize > 100000 {
		return fmt.Errorf("%w: --batch-size %d (want 1..100000)", schemas.ErrInvalid, o.BatchSize)
	}
	o.Progress = c.bulkProgress(desc)
	return nil
}

func (c commands) importCmd() *cobra.Command {
	var o client.ImportJob
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Import memories from an export file (clawmem or the OpenClaw memory plugins)",
		Long: `Reads clawmem's JSONL export and daily backups, memory-lancedb-pro's JSON export
document, and memory-lancedb rows ({id,text,vector,importance,category,createdAt}, as JSONL or
a JSON array); the format is detected. Ids and timestamps are kept; each row keeps its own
scope (global when it has none) unless --scope is given. Texts are embedded with the
configured model in batches, except rows carrying a vector of the store's size. A row whose
id is stored already is skipped ("exists"), and so is a near-duplicate (0.95) of a memory in
its scope. Rows that cannot be read are reported with their line number; the rest go in.
FILE "-" reads stdin.`,
		Example: "  clawmem import memories.jsonl\n  clawmem import memory-pro-export.json --scope agent:main --dry-run\n" +
			"  clawmem import big.jsonl --skip-existing   # resume after an interruption",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.checkImport(&o, "importing"); err != nil {
				return err
			}
			src, err := client.OpenFileSource(args[0], o.Options.Scope)
			if err != nil {
				return err
			}
			defer src.Close()
			t, err := c.bulkTarget(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer t.Close()
			checked, err := client.ChainChecked(cmd.Context(), src, t)
			if err != nil {
				return err
			}
			return c.printImport(client.Import(cmd.Context(), t, checked, o))
		},
	}
	importFlags(cmd, &o, 1000)
	return cmd
}

// ---- delete-bulk ----

func (c commands) deleteBulkCmd() *cobra.Command {
	var (
		scope, before string
		dryRun        bool
	)
	cmd := &cobra.Command{
		Use:   "delete-bulk",
		Short: "Delete every memory in a scope and/or created before a date",
		Long: `Deletes every memory matching the filters: --scope, --before, or both (at least one
is required, so that nothing deletes everything by accident). --before takes a date
(2025-01-01, meaning midnight UTC), an RFC 3339 time or epoch milliseconds, and is exclusive.
--dry-run only counts.`,
		Example: "  clawmem delete-bulk --scope custom:scratch --dry-run\n  clawmem delete-bulk --scope global --before 2025-01-01",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := client.DeleteBulkRequest(scope, before, dryRun)
			if err != nil {
				return err
			}
			return c.Do(cmd, schemas.OpDeleteBulk, "", r, nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&scope, "scope", "", "only this scope")
	f.StringVar(&before, "before", "", "only memories created before this date")
	f.BoolVar(&dryRun, "dry-run", false, "count, delete nothing")
	return cmd
}

// ---- reembed ----

func (c commands) reembedCmd() *cobra.Command {
	var (
		source string
		force  bool
		o      client.ImportJob
	)
	cmd := &cobra.Command{
		Use:   "reembed --source-db PATH",
		Short: "Copy every memory of another store into this one, embedding each text with the current model",
		Long: `Reads the store at --source-db (a clawmem store directory, or with -tags lancedb a plugin's
LanceDB database), embeds every text with the configured model and writes the memories into the
current store (--db, the data dir's store, or the running clawmem), keeping ids, timestamps,
scopes, categories, importance and metadata. Use it after changing the embedding model or its
dimensions: point a new data dir's config at the new model and re-embed from the old store.
Rerun with --skip-existing to go on after an interruption. Re-embedding the current store in
place needs --force, and the same dimensions.`,
		Example: "  clawmem reembed --source-db ~/.clawmem/store --data-dir ~/.clawmem-v2\n" +
			"  clawmem reembed --source-db /backup/store --skip-existing --batch-size 64",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if source == "" {
				return errors.New("give --source-db PATH: the store to read")
			}
			if err := c.checkImport(&o, "re-embedding"); err != nil {
				return err
			}
			o.Options.NoDedup = true // a copy: the source decided what is a duplicate
			cfg, err := c.Config()
			if err != nil {
				return err
			}
			target := cfg.DBPath
			if c.DB() != "" {
				target = c.DB()
			}
			if client.SameDir(source, target) {
				if !force {
					return fmt.Errorf("--source-db %s is the current store: re-embedding in place rewrites every vector; "+
						"pass --force to do that, or write into another store (--db or --data-dir)", source)
				}
				return c.reembedInPlace(cmd.Context(), cfg, target, o)
			}
			src, err := client.OpenStoreSource(cmd.Context(), source, "", false)
			if err != nil {
				return err
			}
			defer src.Close()
			t, err := c.bulkTarget(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer t.Close()
			return c.printImport(client.Import(cmd.Context(), t, src, o))
		},
	}
	cmd.Flags().StringVar(&source, "source-db", "", "the store to read (a clawmem store directory)")
	cmd.Flags().BoolVar(&force, "force", false, "allow re-embedding the current store in place")
	f := cmd.Flags()
	f.BoolVar(&o.Options.DryRun, "dry-run", false, "read and check every memory, write nothing")
	f.BoolVar(&o.SkipExisting, "skip-existing", false, "skip ids the target has already (resuming)")
	f.IntVar(&o.BatchSize, "batch-size", 32, "memories embedded together")
	return cmd
}

// reembedInPlace gives every memory of the store at dir a new vector from
// the current model, keeping everything else.
func (c commands) reembedInPlace(ctx context.Context, cfg *config.Config, dir string, o client.ImportJob) error {
	cfg.DBPath = dir
	t, err := client.OpenLocalBulk(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer t.Close()
	done, total, err := client.ReembedInPlace(ctx, t, client.ReembedOptions{BatchSize: o.BatchSize, DryRun: o.Options.DryRun,
		Progress: c.bulkProgress("re-embedding in place")})
	if err != nil {
		return err
	}
	if c.JSON() {
		return c.PrintJSON(map[string]any{"reembedded": done, "total": total, "dryRun": o.Options.DryRun})
	}
	fmt.Fprintf(c.Stdout(), "re-embedded %d of %d memories in place in %s\n", done, total, dir)
	return nil
}

// ---- migrate ----

func (c commands) migrateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Bring memories over from the OpenClaw memory plugins (check, run, verify)",
		Long: `Finds the memories of memory-lancedb (~/.openclaw/memory/lancedb, ~/.claude/memory/lancedb)
and memory-lancedb-pro (~/.openclaw/memory/lancedb-pro), or the source given with --source: a
LanceDB database (needs a build with -tags lancedb), a clawmem store directory, or a JSON/JSONL
export. "check" says what it found, "run" imports it (keeping ids and timestamps, createdAt
becoming timestamp, rows without a scope going to global, vectors kept when their size is the
store's), and "verify" checks every source row is in the store.`,
	}
	cmd.AddCommand(c.migrateCheckCmd(), c.migrateRunCmd(), c.migrateVerifyCmd())
	return cmd
}

func (c commands) migrateCheckCmd() *cobra.Command {
	var source string
	cmd := &cobra.Command{
		Use:     "check",
		Short:   "Find legacy memories and say what a migration would read",
		Example: "  clawmem migrate check\n  clawmem migrate check --source ~/exports/memories.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			found := client.CheckSources(cmd.Context(), source)
			if c.JSON() {
				return c.PrintJSON(found)
			}
			client.WriteChecks(c.Stdout(), found)
			return nil
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "the source to check (default: the plugins' paths)")
	return cmd
}

func (c commands) migrateRunCmd() *cobra.Command {
	var (
		source string
		o      client.ImportJob
	)
	cmd := &cobra.Command{
		Use:     "run",
		Short:   "Import the legacy memories into the store",
		Example: "  clawmem migrate run --dry-run\n  clawmem migrate run --source ~/.openclaw/memory/lancedb --skip-existing",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.checkImport(&o, "migrating"); err != nil {
				return err
			}
			paths, err := client.FoundSources(source)
			if err != nil {
				return err
			}
			t, err := c.bulkTarget(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer t.Close()
			return client.Migrate(cmd.Context(), t, paths, o, c.printImport)
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "the source to import (default: every plugin path that exists)")
	importFlags(cmd, &o, 1000)
	return cmd
}

func (c commands) migrateVerifyCmd() *cobra.Command {
	var source, scope string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check that every legacy memory is in the store",
		Long: `Reads the source again and looks up every row in the store: present (same id and text),
stored as a duplicate (the id is missing but the scope holds the same text: the import skipped it as
a near-duplicate), changed (same id, other text) or missing. Exits 1 when a row is missing.`,
		Example: "  clawmem migrate verify\n  clawmem migrate verify --source memories.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			paths, err := client.FoundSources(source)
			if err != nil {
				return err
			}
			t, err := c.bulkTarget(ctx, true)
			if err != nil {
				return err
			}
			defer t.Close()
			reports, err := client.Verify(ctx, t, paths, scope)
			if err != nil {
				return err
			}
			if c.JSON() {
				if err := c.PrintJSON(reports); err != nil {
					return err
				}
			} else {
				client.WriteVerify(c.Stdout(), reports)
			}
			if missing := client.NotStored(reports); missing > 0 {
				return c.Silent(fmt.Errorf("%d source rows are not in the store", missing))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "the source to verify (default: every plugin path that exists)")
	cmd.Flags().StringVar(&scope, "scope", "", "the --scope the migration was run with")
	return cmd
}
