package portable

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/internal/workpool"
	"github.com/clawmem/clawmem/schemas"
)

// Embedder is what an import needs of the embedding model.
type Embedder interface {
	EmbedPassages(ctx context.Context, texts []string) ([][]float32, error)
}

// Status is what became of one row.
type Status string

// Row outcomes.
const (
	Imported Status = "imported"
	Skipped  Status = "skipped"
	Failed   Status = "failed"
)

// Why a row was skipped.
const (
	// ReasonExists: a memory with the row's id is stored already (or the id
	// came earlier in the same import).
	ReasonExists = "exists"
	// ReasonDuplicate: a memory in the row's scope is a near-duplicate
	// (vector score at or above the dedup threshold).
	ReasonDuplicate = "duplicate"
)

// Result is one row's outcome. For a duplicate, DuplicateOf is the memory
// it duplicates and Similarity their vector score.
type Result struct {
	Line        int     `json:"line,omitempty"`
	ID          string  `json:"id,omitempty"`
	Status      Status  `json:"status"`
	Reason      string  `json:"reason,omitempty"`
	DuplicateOf string  `json:"duplicateOf,omitempty"`
	Similarity  float64 `json:"similarity,omitempty"`
}

// DefaultDedup is the import's duplicate threshold, auto-capture's (SPEC §1).
const DefaultDedup = memory.DedupCapture

// ImportOptions tune an Importer.
type ImportOptions struct {
	// Scope, when set, replaces every row's scope.
	Scope string
	// DryRun checks rows and looks up their ids but embeds and writes
	// nothing; rows that would be written are reported as imported.
	DryRun bool
	// Dedup is the vector score at or above which a row duplicating a
	// memory in its scope is skipped; 0 turns the check off.
	Dedup float64
	// ValidateScope checks a row's scope beyond its format (the scope
	// manager's definitions); nil checks the format only.
	ValidateScope func(string) error
	// Lock, when set, is held around each batch's duplicate checks and
	// write, so that concurrent imports into one store cannot both let
	// the same text through.
	Lock sync.Locker
	// Secrets (secrets.mode) is what becomes of a credential in a row's
	// text or metadata: redacted (the default; the row's vector, made
	// from the text with it, is dropped and the text embedded anew), the
	// row failed (refuse), or kept (off).
	Secrets redact.Mode
}

// Importer writes batches of rows into a store, keeping their ids and
// timestamps: a row whose id is stored already is skipped, a row carrying
// a vector of the store's size keeps it, every other row is embedded (one
// embedding call per batch), duplicates are dropped, and the rest of the
// batch is written in one transaction.
type Importer struct {
	store engine.Store
	emb   Embedder
	o     ImportOptions
}

// NewImporter imports into st, embedding with emb.
func NewImporter(st engine.Store, emb Embedder, o ImportOptions) *Importer {
	return &Importer{store: st, emb: emb, o: o}
}

// Import imports one batch and returns each row's outcome in order. An
// error means the batch could not be handled (the store or the embedder
// failed, or ctx ended); rows of it may have been written already, which a
// rerun skips as existing.
func (im *Importer) Import(ctx context.Context, recs []Record) ([]Result, error) {
	res := make([]Result, len(recs))
	mems := make([]schemas.Memory, len(recs))
	pending := make([]int, 0, len(recs))
	seen := make(map[string]struct{}, len(recs))
	for i, rec := range recs {
		res[i] = Result{Line: rec.Line, ID: rec.Memory.ID}
		m, err := rec.Memory, rec.Err
		if err == nil {
			m, err = im.prepare(m)
		}
		if err != nil {
			res[i].Status, res[i].Reason = Failed, Reason(err)
			continue
		}
		res[i].ID = m.ID
		if _, dup := seen[m.ID]; dup {
			res[i].Status, res[i].Reason = Skipped, ReasonExists
			continue
		}
		seen[m.ID] = struct{}{}
		mems[i] = m
		pending = append(pending, i)
	}
	exists := make([]bool, len(recs))
	if err := parallel(ctx, pending, func(i int) (err error) {
		exists[i], err = im.store.Has(ctx, mems[i].ID)
		return err
	}); err != nil {
		return nil, err
	}
	pending = keep(pending, func(i int) bool {
		if exists[i] {
			res[i].Status, res[i].Reason = Skipped, ReasonExists
		}
		return !exists[i]
	})
	if im.o.DryRun {
		for _, i := range pending {
			res[i].Status = Imported
		}
		return res, nil
	}
	if err := im.embed(ctx, mems, res, &pending); err != nil {
		return nil, err
	}
	if im.o.Lock != nil {
		im.o.Lock.Lock()
		defer im.o.Lock.Unlock()
	}
	if err := im.dedupAndWrite(ctx, mems, res, pending); err != nil {
		return nil, err
	}
	return res, nil
}

// prepare applies the scope override and defaults and checks what the store
// would refuse, so that one bad row never fails its batch's transaction.
func (im *Importer) prepare(m schemas.Memory) (schemas.Memory, error) {
	if im.o.Scope != "" {
		m.Scope = im.o.Scope
	}
	m.Normalize()
	if err := schemas.ValidateScope(m.Scope); err != nil {
		return m, rowError("%v", err)
	}
	if im.o.ValidateScope != nil {
		if err := im.o.ValidateScope(m.Scope); err != nil {
			return m, rowError("%v", err)
		}
	}
	if err := im.clean(&m); err != nil {
		return m, rowError("%v", err)
	}
	m.Metadata = engine.MarkCore(m.Metadata, rules.IsCore(m.Text))
	m.ID = strings.ToLower(strings.TrimSpace(m.ID))
	if m.ID == "" {
		m.ID = DerivedID(m.Scope, m.Text, m.Timestamp)
	}
	if !schemas.IsUUID(m.ID) {
		return m, rowError("id %q is not a UUID", m.ID)
	}
	if m.Timestamp < 0 {
		return m, rowError("timestamp %d is negative", m.Timestamp)
	}
	if len(m.Vector) != im.store.Dimensions() {
		m.Vector = nil // another model's vector: embed the text anew
	}
	if err := m.Validate(); err != nil {
		return m, rowError("%v", err)
	}
	return m, nil
}

// clean applies the secrets mode to a row's text and metadata.
func (im *Importer) clean(m *schemas.Memory) error {
	mode := cmp.Or(im.o.Secrets, redact.ModeRedact)
	text, fs, err := redact.Apply(mode, m.Text)
	if err != nil {
		return err
	}
	if len(fs) > 0 && mode == redact.ModeRedact {
		m.Text, m.Vector = text, nil
	}
	if len(m.Metadata) == 0 || mode == redact.ModeOff {
		return nil
	}
	md, n, err := redact.RedactJSON(m.Metadata)
	switch {
	case err != nil:
		return nil // not JSON: Validate says so
	case n > 0 && mode == redact.ModeRefuse:
		return fmt.Errorf("%w (in the metadata); not stored — secrets.mode is refuse", redact.ErrSecret)
	}
	m.Metadata = md
	return nil
}

// embed gives every pending row without a usable vector one, in a single
// call. If that call fails the rows are tried one by one, so that a text
// the model refuses fails alone; if every one fails, the model is down and
// the batch fails.
func (im *Importer) embed(ctx context.Context, mems []schemas.Memory, res []Result, pending *[]int) error {
	var need []int
	for _, i := range *pending {
		if mems[i].Vector == nil {
			need = append(need, i)
		}
	}
	if len(need) == 0 {
		return nil
	}
	texts := make([]string, len(need))
	for j, i := range need {
		texts[j] = mems[i].Text
	}
	vecs, err := im.emb.EmbedPassages(ctx, texts)
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("the embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	if err == nil {
		for j, i := range need {
			mems[i].Vector = vecs[j]
		}
		im.checkVectors(mems, res, pending)
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	batchErr := err
	ok := 0
	for _, i := range need {
		v, err := im.emb.EmbedPassages(ctx, []string{mems[i].Text})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || len(v) != 1 {
			res[i].Status, res[i].Reason = Failed, "embed: "+Reason(err)
			continue
		}
		mems[i].Vector = v[0]
		ok++
	}
	if ok == 0 {
		return fmt.Errorf("embed: %w", batchErr)
	}
	*pending = keep(*pending, func(i int) bool { return res[i].Status != Failed })
	im.checkVectors(mems, res, pending)
	return nil
}

// checkVectors fails rows whose new vector does not fit the store.
func (im *Importer) checkVectors(mems []schemas.Memory, res []Result, pending *[]int) {
	dim := im.store.Dimensions()
	*pending = keep(*pending, func(i int) bool {
		if len(mems[i].Vector) != dim {
			res[i].Status, res[i].Reason = Failed, fmt.Sprintf("embed: the model returned %d dimensions, the store has %d", len(mems[i].Vector), dim)
			return false
		}
		return true
	})
}

// dedupProbes: a near-identical vector lies in or next to its own IVF
// cluster, so a duplicate check probes few (as the store worker's does).
const dedupProbes = 3

// writeChunk is how many rows one transaction writes. The batch is written
// in chunks so that the duplicate checks of one chunk (a vector scan on
// every core) run while the previous chunk is written (SQLite, one core).
const writeChunk = 500

// dedupAndWrite skips rows that duplicate a stored memory in their scope,
// or an earlier row of the batch in the same scope, and writes the rest.
// The batch's own rows are checked against an in-memory index of those
// accepted so far, so a check is right whether or not the chunk before it
// has reached the store yet.
func (im *Importer) dedupAndWrite(ctx context.Context, mems []schemas.Memory, res []Result, pending []int) error {
	var batch *vecindex.Index
	groups := map[string]uint32{}
	if im.o.Dedup > 0 {
		batch = vecindex.New(im.store.Dimensions(), vecindex.Options{Workers: 1})
	}
	hits := make([][]engine.SearchResult, len(mems))
	writing := make(chan error, 1)
	writing <- nil
	for start := 0; start < len(pending); start += writeChunk {
		chunk := pending[start:min(start+writeChunk, len(pending))]
		if batch != nil {
			if err := parallel(ctx, chunk, func(i int) (err error) {
				hits[i], err = im.store.VectorSearch(ctx, mems[i].Vector, engine.SearchOptions{Scopes: engine.InScopes(mems[i].Scope),
					Limit: 1, MinScore: im.o.Dedup, Probes: dedupProbes})
				return err
			}); err != nil {
				<-writing
				return err
			}
			chunk = keep(slices.Clone(chunk), func(i int) bool { return im.unique(i, mems, res, hits[i], batch, groups) })
		}
		if err := <-writing; err != nil {
			return err
		}
		go func() { writing <- im.write(ctx, mems, res, chunk) }()
	}
	return <-writing
}

// unique reports whether row i duplicates nothing, recording it in the
// batch index if so and marking it skipped if not.
func (im *Importer) unique(i int, mems []schemas.Memory, res []Result, stored []engine.SearchResult, batch *vecindex.Index, groups map[string]uint32) bool {
	m := mems[i]
	if !m.Current() {
		// History (a superseded or archived fact) is kept as it was, even
		// when a current memory says much the same.
		return true
	}
	if len(stored) > 0 {
		h := stored[0]
		res[i].Status, res[i].Reason, res[i].DuplicateOf, res[i].Similarity = Skipped, ReasonDuplicate, h.Memory.ID, h.Score
		return false
	}
	g, known := groups[m.Scope]
	if !known {
		g = uint32(len(groups))
		groups[m.Scope] = g
	} else if h := batch.SearchExact(m.Vector, 1, vecindex.NewGroups(g)); len(h) > 0 {
		if score := engine.VectorScore(float64(h[0].Sim)); score >= im.o.Dedup {
			res[i].Status, res[i].Reason, res[i].DuplicateOf, res[i].Similarity = Skipped, ReasonDuplicate, mems[h[0].Key].ID, score
			return false
		}
	}
	_ = batch.Upsert(int64(i), g, m.Vector) // validated in prepare
	return true
}

// write stores rows in one transaction. Should that fail on a row (an id
// stored meanwhile by someone else, say), the rows are written one by one
// so that only that row is reported.
func (im *Importer) write(ctx context.Context, mems []schemas.Memory, res []Result, rows []int) error {
	if len(rows) == 0 {
		return nil
	}
	batch := make([]schemas.Memory, len(rows))
	for j, i := range rows {
		batch[j] = mems[i]
	}
	err := im.store.Import(ctx, batch...)
	if err == nil {
		for _, i := range rows {
			res[i].Status = Imported
		}
		return nil
	}
	if ctx.Err() != nil || !(errors.Is(err, engine.ErrExists) || errors.Is(err, schemas.ErrInvalid)) {
		return err
	}
	for _, i := range rows {
		err := im.store.Import(ctx, mems[i])
		switch {
		case err == nil:
			res[i].Status = Imported
		case errors.Is(err, engine.ErrExists):
			res[i].Status, res[i].Reason = Skipped, ReasonExists
		case errors.Is(err, schemas.ErrInvalid):
			res[i].Status, res[i].Reason = Failed, Reason(err)
		default:
			return err
		}
	}
	return nil
}

// Reason is an error as a row's reason: without the "invalid input: "
// prefix validation errors carry.
func Reason(err error) string {
	if err == nil {
		return "unknown error"
	}
	return strings.ReplaceAll(err.Error(), schemas.ErrInvalid.Error()+": ", "")
}

// keep filters idx in place.
func keep(idx []int, fn func(int) bool) []int {
	out := idx[:0]
	for _, i := range idx {
		if fn(i) {
			out = append(out, i)
		}
	}
	return out
}

// parallel runs fn over idx on up to GOMAXPROCS goroutines and returns the
// first error; the rest stop early once one failed.
func parallel(ctx context.Context, idx []int, fn func(i int) error) error {
	if err := workpool.Try(runtime.GOMAXPROCS(0), len(idx), func(j int) error { return fn(idx[j]) }); err != nil {
		return err
	}
	return ctx.Err()
}
