package workers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/robfig/cron/v3"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/schemas"
)

// Backup file kinds. A backup is the seed's format (no vectors); a
// snapshot also carries every vector, so restoring it needs no embedder.
const (
	BackupKindBackup   = "backup"
	BackupKindSnapshot = "snapshot"
)

// backupTempPrefix names files being written. It never matches a backup's
// name, so a crash mid-write leaves nothing that looks like a backup.
const backupTempPrefix = ".clawmem-backup-tmp-"

var backupName = regexp.MustCompile(`^memory-(backup|snapshot)-(\d{4}-\d{2}-\d{2})\.jsonl$`)

// BackupFileName is the file a backup of kind taken on day is written to:
// memory-backup-YYYY-MM-DD.jsonl or memory-snapshot-YYYY-MM-DD.jsonl (UTC).
func BackupFileName(kind string, day time.Time) string {
	return "memory-" + kind + "-" + day.UTC().Format(time.DateOnly) + ".jsonl"
}

// BackupConfig tunes the backup job.
type BackupConfig struct {
	// Dir receives the backup files; required.
	Dir string
	// Schedule is a cron spec; default @daily. "off" leaves only the first
	// backup and requests.
	Schedule string
	// Keep is how many backups of each kind stay, on disk and in the
	// Object Store; default 7.
	Keep int
	// WithVectors also writes a snapshot with vectors.
	WithVectors bool
	// FirstDelay is when the first backup runs after start; default 1 min
	// (the seed's), negative: not before the schedule.
	FirstDelay time.Duration
	// Now is the clock naming the files; default time.Now.
	Now func() time.Time
}

func (c BackupConfig) withDefaults() BackupConfig {
	if c.Schedule == "" {
		c.Schedule = "@daily"
	}
	if c.Keep <= 0 {
		c.Keep = 7
	}
	if c.FirstDelay == 0 {
		c.FirstDelay = time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// BackupJob writes the store to JSONL files, atomically, keeps the newest
// few and copies each to the Object Store bucket schemas.BucketBackups.
type BackupJob struct {
	store engine.Store
	js    jetstream.JetStream
	cfg   BackupConfig
	log   *slog.Logger
	// mu makes runs one at a time: the schedule, the first run and
	// requests may meet, and they share the temp-file cleanup.
	mu sync.Mutex
	// wrap, for tests, stands between the encoder and the temp file; a
	// writer that fails is a disk that fills or a crash mid-write.
	wrap func(io.Writer) io.Writer
	// ready is closed once Run answers backup requests.
	ready chan struct{}
}

// Ready is closed once Run answers backup requests (at once without NATS).
func (b *BackupJob) Ready() <-chan struct{} { return b.ready }

// NewBackupJob checks cfg and builds the job. js may be nil: then there is
// no Object Store copy and no request endpoint.
func NewBackupJob(store engine.Store, js jetstream.JetStream, cfg BackupConfig, log *slog.Logger) (*BackupJob, error) {
	cfg = cfg.withDefaults()
	if cfg.Dir == "" {
		return nil, fmt.Errorf("%w: backup directory is empty", schemas.ErrInvalid)
	}
	if cfg.Schedule != "off" {
		if _, err := cron.ParseStandard(cfg.Schedule); err != nil {
			return nil, fmt.Errorf("%w: backup schedule %q: %v", schemas.ErrInvalid, cfg.Schedule, err)
		}
	}
	if log == nil {
		log = slog.Default()
	}
	return &BackupJob{store: store, js: js, cfg: cfg, log: log.With("job", "backup"), ready: make(chan struct{})}, nil
}

// BackupFile describes one backup file, on disk or in the Object Store.
type BackupFile struct {
	Name  string    `json:"name"`
	Path  string    `json:"path,omitempty"` // on disk only
	Kind  string    `json:"kind"`
	Date  string    `json:"date"` // YYYY-MM-DD, from the name
	Size  int64     `json:"size"`
	Count int       `json:"count"` // memories
	Time  time.Time `json:"time"`  // written (disk) or uploaded (Object Store)
}

// BackupResult is what one run did.
type BackupResult struct {
	Files    []BackupFile `json:"files"`
	Count    int          `json:"count"`
	Removed  []string     `json:"removed,omitempty"` // older backups deleted
	Uploaded bool         `json:"uploaded"`
	// UploadError says why the Object Store copy failed; the files on
	// disk are written all the same.
	UploadError string        `json:"uploadError,omitempty"`
	Duration    time.Duration `json:"duration"`
}

// Run takes the first backup after FirstDelay, then on the schedule, and
// answers backup requests, until ctx ends. A run in progress then stops
// (leaving the earlier backups as they were) and Run returns after it.
func (b *BackupJob) Run(ctx context.Context) error {
	// Every run is waited for (scheduled ones by cron, the others in wg),
	// so none touches the store after Run returns and the caller closes it.
	var (
		wg      sync.WaitGroup
		gate    sync.Mutex
		stopped bool
		sub     *nats.Subscription
	)
	defer func() {
		if sub != nil {
			_ = sub.Unsubscribe()
		}
		gate.Lock()
		stopped = true
		gate.Unlock()
		wg.Wait()
	}()
	if b.js != nil {
		var err error
		sub, err = b.js.Conn().QueueSubscribe(schemas.AdminSubject(schemas.OpBackup), "clawmem-backup", func(m *nats.Msg) {
			gate.Lock()
			if stopped {
				gate.Unlock()
				data, _ := json.Marshal(schemas.Failure(schemas.CodeInternal, "clawmem is shutting down; retry", nil))
				_ = m.Respond(data)
				return
			}
			wg.Add(1)
			gate.Unlock()
			defer wg.Done()
			b.answer(ctx, m)
		})
		if err != nil {
			return fmt.Errorf("backup: subscribe: %w", err)
		}
		// The server has the subscription before Ready says so.
		if err := b.js.Conn().Flush(); err != nil {
			return fmt.Errorf("backup: subscribe: %w", err)
		}
	}
	close(b.ready)
	run := func(why string) {
		res, err := b.RunOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			b.log.Error("backup failed", "trigger", why, "err", err)
		case err == nil:
			b.log.Info("backup written", "trigger", why, "memories", res.Count, "files", len(res.Files),
				"uploaded", res.Uploaded, "removed", len(res.Removed), "took", res.Duration.Round(time.Millisecond))
		}
	}
	if b.cfg.FirstDelay > 0 {
		wg.Go(func() {
			t := time.NewTimer(b.cfg.FirstDelay)
			defer t.Stop()
			select {
			case <-ctx.Done():
			case <-t.C:
				run("start")
			}
		})
	}
	if b.cfg.Schedule != "off" {
		cr := cron.New(cron.WithLogger(cronLogger{b.log}), cron.WithChain(cron.SkipIfStillRunning(cronLogger{b.log})))
		if _, err := cr.AddFunc(b.cfg.Schedule, func() { run("schedule") }); err != nil {
			return err
		}
		cr.Start()
		defer func() { <-cr.Stop().Done() }()
	}
	b.log.Info("backups scheduled", "dir", b.cfg.Dir, "schedule", b.cfg.Schedule, "keep", b.cfg.Keep,
		"first", b.cfg.FirstDelay, "vectors", b.cfg.WithVectors, "objectStore", b.js != nil)
	<-ctx.Done()
	return nil
}

// answer runs a requested backup and replies with a schemas.ToolResult
// whose details are the BackupResult.
func (b *BackupJob) answer(ctx context.Context, m *nats.Msg) {
	res, err := b.RunOnce(ctx)
	var reply schemas.ToolResult
	if err != nil {
		b.log.Error("requested backup failed", "err", err)
		reply = schemas.Failure(schemas.CodeInternal, "backup failed: "+err.Error(), nil)
	} else {
		b.log.Info("backup written on request", "memories", res.Count, "files", len(res.Files), "uploaded", res.Uploaded)
		reply = schemas.Reply(res.Summary(), res)
	}
	data, _ := json.Marshal(reply)
	if err := m.Respond(data); err != nil {
		b.log.Warn("backup reply not sent", "err", err)
	}
}

// Summary is a one-line account of the run.
func (r BackupResult) Summary() string {
	names := make([]string, len(r.Files))
	for i, f := range r.Files {
		names[i] = f.Path
	}
	s := fmt.Sprintf("backed up %d memories to %s", r.Count, strings.Join(names, ", "))
	switch {
	case r.Uploaded:
		s += " (copied to the Object Store " + schemas.BucketBackups + ")"
	case r.UploadError != "":
		s += "; the Object Store copy failed: " + r.UploadError
	}
	return s
}

// RunOnce writes a backup now (and a snapshot, WithVectors), removes old
// ones and uploads the new files. A file is written under a temporary name,
// synced and renamed into place, so a failure at any point leaves the
// earlier backups as they were and nothing partial under a backup's name.
func (b *BackupJob) RunOnce(ctx context.Context) (BackupResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	start := time.Now()
	var res BackupResult
	if err := os.MkdirAll(b.cfg.Dir, 0o700); err != nil {
		return res, fmt.Errorf("backup dir: %w", err)
	}
	b.removeStaleTemps()
	now := b.cfg.Now()
	kinds := []string{BackupKindBackup}
	if b.cfg.WithVectors {
		kinds = append(kinds, BackupKindSnapshot)
	}
	outs := make([]*pendingFile, len(kinds))
	defer func() {
		for _, o := range outs {
			if o != nil {
				o.abort()
			}
		}
	}()
	for i := range kinds {
		o, err := b.createPending()
		if err != nil {
			return res, err
		}
		outs[i] = o
	}
	// Rows are written as `clawmem export` writes them, so a backup is
	// also an export file any importer reads.
	var line []byte
	err := b.store.Iterate(ctx, engine.IterateOptions{Scopes: engine.AllScopes(), WithVectors: b.cfg.WithVectors}, func(m schemas.Memory) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		for i, o := range outs {
			line = append(portable.AppendRow(line[:0], m, i == 1), '\n')
			if _, err := o.bw.Write(line); err != nil {
				return err
			}
		}
		res.Count++
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("write backup: %w", err)
	}
	for i, o := range outs {
		name := BackupFileName(kinds[i], now)
		size, err := o.commit(filepath.Join(b.cfg.Dir, name))
		outs[i] = nil
		if err != nil {
			return res, fmt.Errorf("write %s: %w", name, err)
		}
		res.Files = append(res.Files, BackupFile{Name: name, Path: filepath.Join(b.cfg.Dir, name), Kind: kinds[i],
			Date: now.UTC().Format(time.DateOnly), Size: size, Count: res.Count, Time: now})
	}
	removed, err := b.prune()
	res.Removed = removed
	if err != nil {
		return res, err
	}
	if b.js != nil {
		if err := b.upload(ctx, res.Files); err != nil {
			res.UploadError = err.Error()
			b.log.Warn("backup not copied to the Object Store; the files on disk are complete", "err", err)
		} else {
			res.Uploaded = true
		}
	}
	res.Duration = time.Since(start)
	return res, nil
}

// pendingFile is a backup being written under a temporary name.
type pendingFile struct {
	f  *os.File
	bw *bufio.Writer
}

func (b *BackupJob) createPending() (*pendingFile, error) {
	f, err := os.CreateTemp(b.cfg.Dir, backupTempPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	var w io.Writer = f
	if b.wrap != nil {
		w = b.wrap(f)
	}
	return &pendingFile{f: f, bw: bufio.NewWriterSize(w, 1<<20)}, nil
}

// commit makes the file durable and gives it its name: data first (fsync),
// then the rename, then the directory entry (fsync of the directory).
func (p *pendingFile) commit(path string) (int64, error) {
	tmp := p.f.Name()
	err := p.bw.Flush()
	if err == nil {
		err = p.f.Sync()
	}
	var size int64
	if err == nil {
		var st os.FileInfo
		if st, err = p.f.Stat(); err == nil {
			size = st.Size()
		}
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return size, syncDir(filepath.Dir(path))
}

func (p *pendingFile) abort() {
	p.f.Close()
	os.Remove(p.f.Name())
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be opened for sync there; rename is durable
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// removeStaleTemps deletes what a crashed run left. Only one run at a time
// writes here: the job's mutex in this process, and the store's lock
// against any other process backing up the same store.
func (b *BackupJob) removeStaleTemps() {
	entries, err := os.ReadDir(b.cfg.Dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), backupTempPrefix) {
			if err := os.Remove(filepath.Join(b.cfg.Dir, e.Name())); err == nil {
				b.log.Info("removed an unfinished backup left by an earlier run", "file", e.Name())
			}
		}
	}
}

// prune deletes all but the newest Keep files of each kind. Newest is by
// the date in the name, not the file time, which copying may change.
func (b *BackupJob) prune() ([]string, error) {
	files, err := ListBackups(b.cfg.Dir, false)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, name := range surplus(files, b.cfg.Keep) {
		if err := os.Remove(filepath.Join(b.cfg.Dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("remove old backup: %w", err)
		}
		removed = append(removed, name)
	}
	return removed, nil
}

// surplus names the files beyond the newest keep of each kind.
func surplus(files []BackupFile, keep int) []string {
	byKind := map[string][]string{}
	for _, f := range files {
		byKind[f.Kind] = append(byKind[f.Kind], f.Name)
	}
	var out []string
	for _, names := range byKind {
		slices.Sort(names)
		if len(names) > keep {
			out = append(out, names[:len(names)-keep]...)
		}
	}
	slices.Sort(out)
	return out
}

// upload copies files to the Object Store, then prunes it like the disk.
func (b *BackupJob) upload(ctx context.Context, files []BackupFile) error {
	obs, err := b.js.ObjectStore(ctx, schemas.BucketBackups)
	if err != nil {
		return fmt.Errorf("object store %s: %w", schemas.BucketBackups, err)
	}
	for _, f := range files {
		if err := putBackup(ctx, obs, f); err != nil {
			return err
		}
	}
	objs, err := ListBackupObjects(ctx, b.js)
	if err != nil {
		return err
	}
	for _, name := range surplus(objs, b.cfg.Keep) {
		if err := obs.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return fmt.Errorf("delete old copy %s: %w", name, err)
		}
	}
	return nil
}

func putBackup(ctx context.Context, obs jetstream.ObjectStore, f BackupFile) error {
	r, err := os.Open(f.Path)
	if err != nil {
		return err
	}
	defer r.Close()
	meta := jetstream.ObjectMeta{Name: f.Name, Description: "clawmem " + f.Kind + " of " + f.Date,
		Metadata: map[string]string{"kind": f.Kind, "date": f.Date, "count": strconv.Itoa(f.Count)}}
	if _, err := obs.Put(ctx, meta, r); err != nil {
		return fmt.Errorf("upload %s: %w", f.Name, err)
	}
	return nil
}

// ListBackups returns the backup files in dir, oldest first. count reads
// each file to count its memories (lines).
func ListBackups(dir string, count bool) ([]BackupFile, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []BackupFile
	for _, e := range entries {
		m := backupName.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		f := BackupFile{Name: e.Name(), Path: filepath.Join(dir, e.Name()), Kind: m[1], Date: m[2],
			Size: info.Size(), Time: info.ModTime(), Count: -1}
		if count {
			if f.Count, err = countLines(f.Path); err != nil {
				return nil, err
			}
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b BackupFile) int { return strings.Compare(a.Date+a.Kind, b.Date+b.Kind) })
	return out, nil
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 256<<10)
	n := 0
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// ListBackupObjects returns the backup copies in the Object Store, oldest
// first.
func ListBackupObjects(ctx context.Context, js jetstream.JetStream) ([]BackupFile, error) {
	obs, err := js.ObjectStore(ctx, schemas.BucketBackups)
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", schemas.BucketBackups, err)
	}
	infos, err := obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", schemas.BucketBackups, err)
	}
	var out []BackupFile
	for _, info := range infos {
		m := backupName.FindStringSubmatch(info.Name)
		if m == nil {
			continue
		}
		count := -1
		if c, err := strconv.Atoi(info.Metadata["count"]); err == nil {
			count = c
		}
		out = append(out, BackupFile{Name: info.Name, Kind: m[1], Date: m[2], Size: int64(info.Size), Count: count, Time: info.ModTime})
	}
	slices.SortFunc(out, func(a, b BackupFile) int { return strings.Compare(a.Date+a.Kind, b.Date+b.Kind) })
	return out, nil
}

// ErrStoreNotEmpty refuses a restore that would mix a backup with
// memories already stored.
var ErrStoreNotEmpty = errors.New("store is not empty")

// RestoreReport is what a restore did. Restored must equal Expected.
type RestoreReport struct {
	Lines       int `json:"lines"`       // memories in the file
	Duplicates  int `json:"duplicates"`  // lines repeating an earlier id, skipped
	Expected    int `json:"expected"`    // distinct memories, history included
	Restored    int `json:"restored"`    // memories in the store afterwards, history included
	VectorsKept int `json:"vectorsKept"` // taken from the file
	Embedded    int `json:"embedded"`    // embedded again
}

// WriteText prints the report of a restore from source for a person.
func (r RestoreReport) WriteText(w io.Writer, source string) {
	fmt.Fprintf(w, "restored %s\nexpected %d memories, restored %d", source, r.Expected, r.Restored)
	fmt.Fprintf(w, " (%d vectors from the file, %d embedded", r.VectorsKept, r.Embedded)
	if r.Duplicates > 0 {
		fmt.Fprintf(w, ", %d repeated ids skipped", r.Duplicates)
	}
	fmt.Fprintln(w, ")")
}

// restoreBatch is how many memories are embedded and imported together.
const restoreBatch = 256

// Restore loads a backup or snapshot into an empty store, keeping ids and
// timestamps. Vectors in the file are kept when they have the store's
// dimension; every other text is embedded with emb. The whole file is
// checked before anything is written. progress, when set, is called with
// the memories done and due.
func Restore(ctx context.Context, st engine.Store, emb embed.Embedder, r io.Reader, progress func(done, total int)) (RestoreReport, error) {
	var rep RestoreReport
	stats, err := st.Stats(ctx, engine.AllScopes())
	if err != nil {
		return rep, err
	}
	// A backup holds every row, superseded and archived ones too: the
	// store is counted the same way, before and after.
	if n := stats.Total + stats.History; n > 0 {
		return rep, fmt.Errorf("%w: it holds %d memories; restore only into an empty store (a new --db directory)", ErrStoreNotEmpty, n)
	}
	ms, err := readBackup(r, st.Dimensions(), &rep)
	if err != nil {
		return rep, err
	}
	for start := 0; start < len(ms); start += restoreBatch {
		batch := ms[start:min(start+restoreBatch, len(ms))]
		var idx []int
		var texts []string
		for i, m := range batch {
			if m.Vector == nil {
				idx = append(idx, i)
				texts = append(texts, m.Text)
			}
		}
		if len(texts) > 0 {
			vecs, err := emb.EmbedPassages(ctx, texts)
			if err != nil {
				return rep, fmt.Errorf("embed memories %d-%d: %w", start+1, start+len(batch), err)
			}
			for j, i := range idx {
				batch[i].Vector = vecs[j]
			}
		}
		if err := st.Import(ctx, batch...); err != nil {
			return rep, fmt.Errorf("import memories %d-%d: %w", start+1, start+len(batch), err)
		}
		if progress != nil {
			progress(start+len(batch), len(ms))
		}
	}
	if stats, err = st.Stats(ctx, engine.AllScopes()); err != nil {
		return rep, err
	}
	rep.Restored = stats.Total + stats.History
	return rep, nil
}

// readBackup parses and checks every line; a file with any bad line is
// refused whole, with the line numbers.
func readBackup(r io.Reader, dim int, rep *RestoreReport) ([]schemas.Memory, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), schemas.MaxTextBytes+schemas.MaxMetadataBytes+64*dim+(1<<20))
	seen := map[string]bool{}
	var ms []schemas.Memory
	var bad []string
	n, nbad := 0, 0
	for sc.Scan() {
		n++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		rep.Lines++
		var m schemas.Memory
		err := json.Unmarshal(raw, &m)
		if err == nil {
			m.ID = strings.ToLower(m.ID)
			m.Normalize()
			err = m.Validate()
			if err == nil && !schemas.IsUUID(m.ID) {
				err = fmt.Errorf("id %q is not a UUID", m.ID)
			}
		}
		if err != nil {
			if nbad++; nbad <= 10 {
				bad = append(bad, fmt.Sprintf("line %d: %v", n, err))
			}
			continue
		}
		if seen[m.ID] {
			rep.Duplicates++
			continue
		}
		seen[m.ID] = true
		if len(m.Vector) == dim {
			rep.VectorsKept++
		} else {
			m.Vector = nil
			rep.Embedded++
		}
		ms = append(ms, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read backup after line %d: %w", n, err)
	}
	if nbad > 0 {
		if nbad > len(bad) {
			bad = append(bad, fmt.Sprintf("... and %d more", nbad-len(bad)))
		}
		return nil, fmt.Errorf("%w: %d bad lines in the backup, nothing was restored:\n  %s", schemas.ErrInvalid, nbad, strings.Join(bad, "\n  "))
	}
	rep.Expected = len(ms)
	return ms, nil
}
