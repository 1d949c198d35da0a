package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/jobs"
	"github.com/clawmem/clawmem/workers/lessons"
	"github.com/clawmem/clawmem/workers/memlog"
)

// Pipeline is what the front ends do to the pipeline rather than to the
// memories: the dead letters, distillation and backups. NATSPipeline works
// on a running clawmem; the CLI's offline pipeline (cmd/clawmem) on the
// data dir of one that is not running, serving its NATS store itself.
// Both reach JetStream only when an operation needs it, so that what can
// do without (a backup file in a directory) still works when NATS cannot
// be reached; Close lets go of it.
type Pipeline interface {
	// DeadLetters lists the dead letters of stage ("" for every stage),
	// oldest first; never nil.
	DeadLetters(ctx context.Context, stage string) ([]DeadLetter, error)
	// CountDeadLetters is how many dead letters stage ("" every stage) has.
	CountDeadLetters(ctx context.Context, stage string) (int, error)
	// DeadLetter reads one dead letter in full; a sequence the DLQ does not
	// hold is ErrNoDeadLetter.
	DeadLetter(ctx context.Context, seq uint64) (DeadLetterMessage, error)
	// Replay republishes dead letters to their original subjects and
	// removes them from the DLQ: the one with sequence seq, or with seq 0
	// every one of stage. With a stage, a dead letter of another stage is
	// not replayed. Each one's outcome is in the results, in order.
	Replay(ctx context.Context, stage string, seq uint64) ([]ReplayResult, error)
	// PurgeDeadLetters deletes the dead letters of stage ("" every stage)
	// for good and says how many there were.
	PurgeDeadLetters(ctx context.Context, stage string) (int, error)

	// DistillJobs lists the distillation jobs, newest first, of one agent
	// and one session ("" for every one); never nil.
	DistillJobs(ctx context.Context, agent, session string) ([]lessons.Distillation, error)
	// DistillQueue counts the session-end events the distill consumer
	// holds: waiting for a worker, and being handled by one.
	DistillQueue(ctx context.Context) (waiting uint64, handling int, err error)
	// Distill runs the cursor distiller once, with d, over what run
	// selects; log receives its warnings (nil: none).
	Distill(ctx context.Context, d *distill.Distiller, cfg lessons.TranscriptConfig, run lessons.TranscriptRun, log *slog.Logger) (lessons.TranscriptReport, error)

	// BackupNow writes a backup now.
	BackupNow(ctx context.Context) (jobs.BackupResult, error)
	// Backups lists the backup files in dir and the Object Store copies;
	// not reaching the Object Store is told in the list, not as an error.
	Backups(ctx context.Context, dir string) (BackupList, error)
	// OpenBackup opens the backup name names: a file, a file in dir, or
	// an Object Store copy. It also says where it was found.
	OpenBackup(ctx context.Context, name, dir string) (io.ReadCloser, string, error)

	// Status is the deployment's state: the writer, the memory log, the
	// dead letters and each query service instance with its lag.
	Status(ctx context.Context) (Status, error)

	// Rebuild builds the store in dir (new, or behind the log) from the
	// memory log, with vectors of dim dimensions.
	Rebuild(ctx context.Context, dir string, dim int) (memlog.RebuildReport, error)

	// Close lets go of NATS (and of what was started to serve it); a
	// later call reaches it again.
	Close() error
}

var (
	// ErrNoDeadLetter is wrapped when the DLQ holds no such sequence.
	ErrNoDeadLetter = errors.New("no dead letter")
	// ErrNoNATSData is wrapped when a data dir has no NATS store to serve
	// (clawmem up never ran there, so there is nothing to read); a
	// pipeline's opener returns it (see NewNATSPipelineWith).
	ErrNoNATSData = errors.New("no NATS data")
)

// BackupTimeout bounds a backup requested from a running clawmem: a large
// store takes longer than an ordinary request.
const BackupTimeout = 10 * time.Minute

// BackupList is what Backups finds.
type BackupList struct {
	Dir              string            `json:"dir"`
	Local            []jobs.BackupFile `json:"local"`
	ObjectStore      []jobs.BackupFile `json:"objectStore"`
	ObjectStoreError string            `json:"objectStoreError,omitempty"`
}

// NATSPipeline works on a clawmem's NATS: JetStream for the dead letters,
// the distill jobs and the Object Store, and a request to the store worker
// for a backup. It connects on first use and keeps the connection until
// Close.
type NATSPipeline struct {
	open  func() (*nats.Conn, func(), error) // the connection and what ends it
	mu    sync.Mutex
	nc    *nats.Conn
	js    jetstream.JetStream
	close func()
}

// NewNATSPipeline connects with dial on first use; Close closes that
// connection.
func NewNATSPipeline(dial func() (*nats.Conn, error)) *NATSPipeline {
	return NewNATSPipelineWith(func() (*nats.Conn, func(), error) {
		nc, err := dial()
		if err != nil {
			return nil, nil, err
		}
		return nc, nc.Close, nil
	})
}

// NewNATSPipelineWith connects with open on first use, which returns the
// connection and what ends it: more than the connection when open started
// something to serve it (a server over a data dir), which then lives no
// longer than the connection. Close calls that.
func NewNATSPipelineWith(open func() (*nats.Conn, func(), error)) *NATSPipeline {
	return &NATSPipeline{open: open}
}

// get is the connection and its JetStream, made on first use.
func (p *NATSPipeline) get() (*nats.Conn, jetstream.JetStream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.js != nil {
		return p.nc, p.js, nil
	}
	nc, closeFn, err := p.open()
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	p.nc, p.js, p.close = nc, js, closeFn
	return nc, js, nil
}

// Close ends the connection; a later call connects again.
func (p *NATSPipeline) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.close != nil {
		p.close()
	}
	p.nc, p.js, p.close = nil, nil, nil
	return nil
}

// Rebuild applies the memory log to the store in dir. The store keeps its
// change log on: it may become a writer's store, and what the log brings
// is not logged again.
func (p *NATSPipeline) Rebuild(ctx context.Context, dir string, dim int) (memlog.RebuildReport, error) {
	_, js, err := p.get()
	if err != nil {
		return memlog.RebuildReport{}, err
	}
	st, err := sqlitestore.Open(ctx, dir, sqlitestore.Options{Dimensions: dim})
	if err != nil {
		return memlog.RebuildReport{}, err
	}
	defer st.Close()
	return memlog.Rebuild(ctx, js, st, nil)
}

// DistillJobs reads the job records in the distill bucket, as the
// workers write them.
func (p *NATSPipeline) DistillJobs(ctx context.Context, agent, session string) ([]lessons.Distillation, error) {
	_, js, err := p.get()
	if err != nil {
		return nil, err
	}
	jobs, err := lessons.Distillations(ctx, js, agent)
	if err != nil {
		return nil, err
	}
	kept := []lessons.Distillation{}
	for _, j := range jobs {
		if session == "" || j.Session == session {
			kept = append(kept, j)
		}
	}
	return kept, nil
}

// DistillQueue reads the distill consumer's figures: the jobs not yet in
// the job table.
func (p *NATSPipeline) DistillQueue(ctx context.Context) (uint64, int, error) {
	_, js, err := p.get()
	if err != nil {
		return 0, 0, err
	}
	c, err := js.Consumer(ctx, schemas.StreamEvents, schemas.ConsumerDistill)
	if err != nil {
		return 0, 0, err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	return info.NumPending, info.NumAckPending, nil
}

// Distill runs a cursor distiller of its own, once, on this NATS.
func (p *NATSPipeline) Distill(ctx context.Context, d *distill.Distiller, cfg lessons.TranscriptConfig, run lessons.TranscriptRun, log *slog.Logger) (lessons.TranscriptReport, error) {
	_, js, err := p.get()
	if err != nil {
		return lessons.TranscriptReport{}, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cd, err := lessons.NewTranscriptDistiller(js, d, cfg, log)
	if err != nil {
		return lessons.TranscriptReport{}, err
	}
	return cd.RunOnce(ctx, run)
}

// Backups lists dir first, so that the files are listed even when
// NATS is out of reach.
func (p *NATSPipeline) Backups(ctx context.Context, dir string) (BackupList, error) {
	local, err := jobs.ListBackups(dir, true)
	if err != nil {
		return BackupList{}, err
	}
	out := BackupList{Dir: dir, Local: local}
	if _, js, err := p.get(); err != nil {
		out.ObjectStoreError = err.Error()
	} else if out.ObjectStore, err = jobs.ListBackupObjects(ctx, js); err != nil {
		out.ObjectStoreError = err.Error()
	}
	if out.Local == nil {
		out.Local = []jobs.BackupFile{}
	}
	if out.ObjectStore == nil {
		out.ObjectStore = []jobs.BackupFile{}
	}
	return out, nil
}

// OpenBackup looks on disk first and reaches NATS only for a bare name
// found on neither path, so that restoring a file needs no NATS.
func (p *NATSPipeline) OpenBackup(ctx context.Context, name, dir string) (io.ReadCloser, string, error) {
	bare := filepath.Base(name) == name
	paths := []string{name}
	if bare {
		paths = append(paths, filepath.Join(dir, name))
	}
	for _, path := range paths {
		f, err := os.Open(path)
		if err == nil {
			return f, path, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, "", err
		}
	}
	if !bare {
		return nil, "", fmt.Errorf("%s: no such file", name)
	}
	_, js, err := p.get()
	if errors.Is(err, ErrNoNATSData) {
		return nil, "", fmt.Errorf("%s: no such file in . or %s, and no Object Store here", name, dir)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s is not a file here and the Object Store is unreachable: %w", name, err)
	}
	obs, err := js.ObjectStore(ctx, schemas.BucketBackups)
	if err == nil {
		var r jetstream.ObjectResult
		if r, err = obs.Get(ctx, name); err == nil {
			return r, "nats:" + schemas.BucketBackups + "/" + name, nil
		}
	}
	if errors.Is(err, jetstream.ErrObjectNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, "", fmt.Errorf("%s: no such file in . or %s, nor in the Object Store %s (see `clawmem backup list`)", name, dir, schemas.BucketBackups)
	}
	return nil, "", fmt.Errorf("object store: %w", err)
}

// downError says that no store worker answers, in words fit for a backup
// request, and is ErrDown all the same.
type downError struct{ msg string }

func (e downError) Error() string { return e.msg }
func (e downError) Unwrap() error { return ErrDown }

// BackupNow asks the store worker of the running clawmem, which also
// copies the backup to the Object Store, within BackupTimeout (or ctx's
// earlier deadline). With no store worker listening it fails at once with
// an error wrapping ErrDown.
func (p *NATSPipeline) BackupNow(ctx context.Context) (jobs.BackupResult, error) {
	nc, _, err := p.get()
	if err != nil {
		return jobs.BackupResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, BackupTimeout)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, schemas.AdminSubject(schemas.OpBackup), []byte(`{}`))
	if errors.Is(err, nats.ErrNoResponders) {
		return jobs.BackupResult{}, downError{fmt.Sprintf("no clawmem store worker answers backup requests on %s: is `clawmem up` (or `clawmem worker store`) running?", nc.ConnectedUrl())}
	}
	if err != nil {
		return jobs.BackupResult{}, fmt.Errorf("backup request: %w", err)
	}
	var reply struct {
		schemas.ToolResult
		Details json.RawMessage `json:"details"`
	}
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return jobs.BackupResult{}, fmt.Errorf("bad reply to the backup request: %w", err)
	}
	if reply.IsError {
		text := "backup failed"
		if len(reply.Content) > 0 {
			text = reply.Content[0].Text
		}
		return jobs.BackupResult{}, errors.New(text)
	}
	var res jobs.BackupResult
	if err := json.Unmarshal(reply.Details, &res); err != nil {
		return res, fmt.Errorf("bad reply to the backup request: %w", err)
	}
	return res, nil
}

// WriteText prints the list for a person: one row per file and Object
// Store copy, and why the Object Store could not be listed, if so.
func (out BackupList) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WHERE\tNAME\tSIZE\tDATE\tWRITTEN\tMEMORIES")
	for _, f := range out.Local {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", out.Dir, f.Name, byteSize(f.Size), f.Date, f.Time.Local().Format(time.DateTime), f.Count)
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
		fmt.Fprintln(w, "no backups yet")
	}
	if out.ObjectStoreError != "" {
		fmt.Fprintln(w, "Object Store:", out.ObjectStoreError)
	}
	return nil
}

// byteSize is n in B, KiB, MiB, …
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

// WriteDistillJobs prints the jobs as a table, one per distilled range.
func WriteDistillJobs(w io.Writer, jobs []lessons.Distillation) error {
	if len(jobs) == 0 {
		_, err := fmt.Fprintln(w, "no distillation jobs")
		return err
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSESSION\tRANGE\tTRIGGER\tSTATUS\tSOURCE\tMESSAGES\tCHUNKS\tCANDIDATES\tMAP ERRORS\tKEPT\tTOKENS\tDURATION\tUPDATED\tERROR")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", j.Agent, j.Session, cmp.Or(j.Range, "-"), j.Trigger, j.Status,
			j.Source, j.Stats.Messages, j.Stats.Chunks, j.Stats.Candidates, j.Stats.MapErrors, j.Lessons,
			j.Stats.InputTokens+j.Stats.OutputTokens, j.Stats.Duration.Round(time.Millisecond), j.Updated.Local().Format(time.DateTime), j.Error)
	}
	return tw.Flush()
}
