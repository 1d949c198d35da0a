package lancestore

import (
	"context"
	"fmt"
	"strings"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// Source is a plugin's memories table opened for reading, what `clawmem
// migrate` copies from; OpenLegacy opens one.
type Source interface {
	// Plugin names the table's writer: PluginPro or PluginLegacy.
	Plugin() string
	// Dimensions is the size of the table's vectors.
	Dimensions() int
	// Count is how many rows the table holds.
	Count(ctx context.Context) (int, error)
	// Iterate calls fn with every memory of the table (rows mapped as
	// rowToMemory describes, the plugin's placeholder row left out), in no
	// set order, stopping at the first error fn returns.
	Iterate(ctx context.Context, fn func(schemas.Memory) error) error
	Close() error
}

// CopyOptions tune Copy.
type CopyOptions struct {
	// Scope, when set, replaces every memory's scope.
	Scope string
	// Embed embeds texts (one call per batch) for memories whose vector
	// cannot be kept: the table's vectors have another size than the
	// store's, or a row has none. Nil skips such memories as invalid, and
	// refuses a copy between different sizes outright.
	Embed func(ctx context.Context, texts []string) ([][]float32, error)
	// BatchSize is how many memories one Import writes (default 256).
	BatchSize int
	// DryRun reads and checks everything and writes (and embeds) nothing.
	DryRun bool
}

// CopyReport says what Copy did.
type CopyReport struct {
	Read       int `json:"read"`
	Copied     int `json:"copied"`     // imported (in a dry run: would be)
	Existing   int `json:"existing"`   // skipped: the id is stored already
	Invalid    int `json:"invalid"`    // skipped: not a valid memory
	Reembedded int `json:"reembedded"` // copied with a new vector
	// Problems says why, for the first invalid rows.
	Problems []string `json:"problems,omitempty"`
}

const (
	defaultCopyBatch = 256
	maxProblems      = 20
)

// Copy copies every memory of src into dst, keeping ids, timestamps and
// scopes, and vectors when their size is the store's; other memories are
// embedded anew with o.Embed. A memory whose id is stored already is
// skipped, so an interrupted copy can simply run again. Each batch is one
// Import: it is written whole or not at all.
func Copy(ctx context.Context, src Source, dst engine.Store, o CopyOptions) (CopyReport, error) {
	var rep CopyReport
	dim := dst.Dimensions()
	keep := src.Dimensions() == dim
	if !keep && o.Embed == nil {
		return rep, fmt.Errorf("%w: the %s table's vectors have %d dimensions and the store's %d: "+
			"copy with the store's embedding model to embed the texts anew", engine.ErrDimensionMismatch,
			src.Plugin(), src.Dimensions(), dim)
	}
	if o.Scope != "" {
		if err := schemas.ValidateScope(o.Scope); err != nil {
			return rep, err
		}
	}
	if o.BatchSize <= 0 {
		o.BatchSize = defaultCopyBatch
	}
	seen := map[string]bool{}
	var batch []schemas.Memory
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		for _, m := range batch {
			if len(m.Vector) != dim {
				rep.Reembedded++
			}
		}
		if err := embedMissing(ctx, batch, dim, o); err != nil {
			return err
		}
		if !o.DryRun {
			if err := dst.Import(ctx, batch...); err != nil {
				return fmt.Errorf("copy a batch of %d memories: %w", len(batch), err)
			}
		}
		rep.Copied += len(batch)
		batch = batch[:0]
		return nil
	}
	err := src.Iterate(ctx, func(m schemas.Memory) error {
		rep.Read++
		if o.Scope != "" {
			m.Scope = o.Scope
		}
		if !keep {
			m.Vector = nil
		}
		if problem := copyProblem(&m, dim, o.Embed != nil); problem != "" {
			rep.Invalid++
			if len(rep.Problems) < maxProblems {
				rep.Problems = append(rep.Problems, problem)
			}
			return nil
		}
		if seen[m.ID] {
			rep.Existing++
			return nil
		}
		seen[m.ID] = true
		has, err := dst.Has(ctx, m.ID)
		if err != nil {
			return err
		}
		if has {
			rep.Existing++
			return nil
		}
		batch = append(batch, m)
		if len(batch) >= o.BatchSize {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return rep, err
}

// copyProblem normalises m and says why it cannot be copied ("" when it
// can). A vector of the wrong size (or none) is fine when it will be
// embedded anew.
func copyProblem(m *schemas.Memory, dim int, canEmbed bool) string {
	if !schemas.IsUUID(m.ID) {
		return fmt.Sprintf("row %q: the id is not a UUID", m.ID)
	}
	m.Normalize()
	vec := m.Vector
	if len(vec) != dim {
		if !canEmbed {
			return fmt.Sprintf("memory %s: its vector has %d dimensions, the store's %d", m.ID, len(vec), dim)
		}
		m.Vector = nil
	}
	if err := m.Validate(); err != nil {
		return fmt.Sprintf("memory %s: %s", m.ID, strings.TrimPrefix(err.Error(), schemas.ErrInvalid.Error()+": "))
	}
	return ""
}

// embedMissing gives every memory of batch without a vector of size dim
// a new one (in a dry run, none: nothing is written).
func embedMissing(ctx context.Context, batch []schemas.Memory, dim int, o CopyOptions) error {
	var texts []string
	var at []int
	for i, m := range batch {
		if len(m.Vector) != dim {
			texts = append(texts, m.Text)
			at = append(at, i)
		}
	}
	if len(texts) == 0 || o.DryRun {
		return nil
	}
	vecs, err := o.Embed(ctx, texts)
	if err != nil {
		return fmt.Errorf("embed %d memories: %w", len(texts), err)
	}
	if len(vecs) != len(texts) {
		return fmt.Errorf("embed %d memories: got %d vectors", len(texts), len(vecs))
	}
	for j, i := range at {
		batch[i].Vector = vecs[j]
	}
	return nil
}
