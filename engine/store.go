// Package engine is clawmem's memory engine: the store interface its
// backends implement, and (in subpackages) the embedder, the vector index,
// full-text helpers and the retrieval pipeline. It knows nothing of NATS.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/clawmem/clawmem/schemas"
)

// Errors a Store returns, matched with errors.Is.
var (
	ErrNotFound          = errors.New("memory not found")
	ErrAmbiguous         = errors.New("ambiguous id prefix")
	ErrExists            = errors.New("memory id already exists")
	ErrDimensionMismatch = errors.New("vector dimension mismatch")
	ErrUnfilteredBulk    = errors.New("bulk delete needs a scope or a before-timestamp filter")
	ErrClosed            = errors.New("store is closed")
	ErrLocked            = errors.New("store is in use by another process")
	ErrScopeDenied       = errors.New("scope not accessible")
)

// AmbiguousError names the memories an id prefix matched.
type AmbiguousError struct {
	Prefix  string
	Matches []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("ambiguous id prefix %q matches %d memories: %s; give more characters",
		e.Prefix, len(e.Matches), strings.Join(e.Matches, ", "))
}

// Is makes errors.Is(err, ErrAmbiguous) true.
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// DimensionError reports a store whose vectors differ from the configured size.
type DimensionError struct{ Table, Config int }

func (e *DimensionError) Error() string {
	return fmt.Sprintf("vector dimension mismatch: table=%d, config=%d. "+
		"Set embedding.dimensions (or the model) to match the stored vectors, "+
		"or use a new data dir and copy the memories over with `clawmem reembed --source-db`", e.Table, e.Config)
}

// Is makes errors.Is(err, ErrDimensionMismatch) true.
func (e *DimensionError) Is(target error) bool { return target == ErrDimensionMismatch }

// ScopeFilter restricts an operation to a set of scopes. The zero value
// matches nothing (fail closed); AllScopes is the admin filter.
type ScopeFilter struct {
	all    bool
	scopes []string
}

// ScopeOrAll is an admin's filter for an optional scope: every scope when
// scope is empty, else that one (checked).
func ScopeOrAll(scope string) (ScopeFilter, error) {
	if scope == "" {
		return AllScopes(), nil
	}
	if err := schemas.ValidateScope(scope); err != nil {
		return ScopeFilter{}, err
	}
	return InScopes(scope), nil
}

// AllScopes is the unrestricted filter used by admin callers (CLI, backups).
func AllScopes() ScopeFilter { return ScopeFilter{all: true} }

// InScopes restricts to the given scopes; with none it matches nothing.
func InScopes(scopes ...string) ScopeFilter {
	return ScopeFilter{scopes: slices.Compact(slices.Sorted(slices.Values(scopes)))}
}

// All reports whether the filter is unrestricted.
func (f ScopeFilter) All() bool { return f.all }

// Scopes returns the allowed scopes of a restricted filter (sorted, unique).
func (f ScopeFilter) Scopes() []string { return slices.Clone(f.scopes) }

// Allows reports whether a memory in scope passes the filter. An empty
// (legacy) scope counts as global.
func (f ScopeFilter) Allows(scope string) bool {
	if f.all {
		return true
	}
	if scope == "" {
		scope = schemas.GlobalScope
	}
	_, ok := slices.BinarySearch(f.scopes, scope)
	return ok
}

// Denies reports whether the filter matches nothing at all.
func (f ScopeFilter) Denies() bool { return !f.all && len(f.scopes) == 0 }

func (f ScopeFilter) String() string {
	if f.all {
		return "all scopes"
	}
	return "scopes [" + strings.Join(f.scopes, ", ") + "]"
}

// Patch is an in-place update; nil fields are left alone. A new Text must come
// with its new Vector.
type Patch struct {
	Text       *string
	Vector     []float32
	Category   *schemas.Category
	Scope      *string
	Importance *float64
	Metadata   []byte
	// Invalidate ends the memory (history): it no longer holds from At,
	// replaced by SupersededBy when set (archived when empty). Restore
	// makes an invalidated memory current again. At most one of the two.
	Invalidate *Invalidation
	Restore    bool
}

// Invalidation is how a memory stops holding.
type Invalidation struct {
	SupersededBy string // the replacing memory's full id; empty: archived
	At           int64  // epoch ms
}

// ListOptions selects a page of memories, newest first.
type ListOptions struct {
	Scopes   ScopeFilter
	Category schemas.Category // empty: any
	Limit    int              // <= 0: DefaultListLimit
	Offset   int
	History  bool // include memories that no longer hold (superseded, archived)
	// Since and Until bound the memories' timestamps (epoch ms): Since
	// ≤ timestamp < Until; 0 leaves that side open.
	Since, Until int64
	// Text keeps the memories whose text contains it, ignoring case.
	Text string
	// Session keeps the memories whose metadata names this session
	// (sessionId, as distillation writes it, or sessionKey, as capture
	// does).
	Session string
	// Core keeps the memories marked core (MarkedCore): auto-recall's
	// core facts, which a store can list without reading the rest.
	Core bool
	// After, when set, starts the page after this memory of the order
	// (timestamp, then id, both descending): a page's last memory gives
	// the next page in constant time whatever its depth, where Offset
	// reads every row before it.
	After *ListKey
}

// NamesSession reports whether metadata names session as its sessionId or
// sessionKey (ListOptions.Session).
func NamesSession(metadata json.RawMessage, session string) bool {
	var md struct {
		ID  any `json:"sessionId"`
		Key any `json:"sessionKey"`
	}
	if json.Unmarshal(metadata, &md) != nil {
		return false
	}
	return md.ID == session || md.Key == session
}

// CoreKey is the metadata key that marks a core fact, with the value
// true: the user's name, languages and standing instructions, which
// auto-recall includes in every block. The memory engine sets it when it
// writes a memory (rules.IsCore), so a store lists them by the mark
// instead of reading every memory of a scope at each prompt.
const CoreKey = "core"

// MarkedCore reports whether metadata marks a core fact: CoreKey is true
// (not "true", not 1).
func MarkedCore(metadata json.RawMessage) bool {
	var md map[string]json.RawMessage
	return json.Unmarshal(metadata, &md) == nil && string(md[CoreKey]) == "true"
}

// MarkCore sets metadata's CoreKey to true for a core fact and removes it
// otherwise, whatever it said: the mark decides what every later prompt
// carries, so only the writer that judged the text (rules.IsCore) sets
// it. Metadata without the mark that needs none, or not a JSON object
// (the store's check reports that), is returned as it is; null counts as
// none.
func MarkCore(metadata json.RawMessage, core bool) json.RawMessage {
	var fields map[string]json.RawMessage
	if len(metadata) > 0 && json.Unmarshal(metadata, &fields) != nil {
		return metadata
	}
	// A marked text is written anew even when it reads as marked: with a
	// key given twice, Go reads the last and SQLite the first.
	if _, has := fields[CoreKey]; !core && !has {
		return metadata
	}
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	if core {
		fields[CoreKey] = json.RawMessage("true")
	} else {
		delete(fields, CoreKey)
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return metadata
	}
	return out
}

// DefaultListLimit is a List page's size when none is given.
const DefaultListLimit = 20

// ListKey is a memory's place in List's order.
type ListKey struct {
	Timestamp int64
	ID        string
}

// BulkFilter selects memories for BulkDelete. At least one of Scopes (not
// AllScopes) or Before must be set.
type BulkFilter struct {
	Scopes ScopeFilter
	Before int64 // epoch ms, exclusive; 0: no time bound
}

// SearchOptions bounds a search.
type SearchOptions struct {
	Scopes   ScopeFilter
	History  bool    // include memories that no longer hold
	Limit    int     // <= 0: 5
	MinScore float64 // results scoring below are dropped
	// Probes, for an approximate index, is how many clusters to probe (0:
	// the index's setting). Fewer is faster and less exact; a duplicate
	// check, looking only for near-identical vectors, needs few.
	Probes int
}

// SearchResult is one hit. Score is in [0,1]: 1/(1+d) with d the cosine
// distance for vector search; the normalised BM25 score for full text. Raw
// holds the backend's own score (cosine similarity, or positive BM25).
type SearchResult struct {
	Memory schemas.Memory
	Score  float64
	Raw    float64
}

// Stats counts memories.
type Stats struct {
	// Total, ByScope and ByCategory count memories that hold; History
	// counts the superseded and archived ones besides.
	History    int            `json:"history"`
	Total      int            `json:"total"`
	ByScope    map[string]int `json:"byScope"`
	ByCategory map[string]int `json:"byCategory"`
}

// Counted says how many memories hold, and how many are history besides
// when any are: "4 memories (plus 1 in history: superseded or archived)".
// Every count of a store shown to a person (stats, doctor) is said this
// way, so that two commands never seem to disagree about one store.
func (s Stats) Counted() string {
	out := fmt.Sprintf("%d memories", s.Total)
	if s.Total == 1 {
		out = "1 memory"
	}
	if s.History > 0 {
		out += fmt.Sprintf(" (plus %d in history: superseded or archived)", s.History)
	}
	return out
}

// IterateOptions selects the rows an Iterate call visits.
type IterateOptions struct {
	Scopes      ScopeFilter
	WithVectors bool
}

// Store is a durable memory store. Every method is safe for concurrent use.
// Methods taking a ScopeFilter never read or change a memory outside it: a
// memory that exists in another scope is reported as not found.
type Store interface {
	// Dimensions is the vector size every memory in this store has.
	Dimensions() int
	// Add stores new memories, giving each a fresh UUID and the current time;
	// it returns them as stored.
	Add(ctx context.Context, ms ...schemas.Memory) ([]schemas.Memory, error)
	// Import stores memories keeping their id and timestamp (a missing id or
	// timestamp is generated). An id that exists already fails with ErrExists
	// and nothing of the batch is written.
	Import(ctx context.Context, ms ...schemas.Memory) error
	// Get returns one memory (with its vector) by full id or prefix.
	Get(ctx context.Context, idOrPrefix string, scopes ScopeFilter) (schemas.Memory, error)
	// Has reports whether a memory with exactly this id exists in any scope.
	Has(ctx context.Context, id string) (bool, error)
	// Resolve turns a full id or 8+ hex char prefix into the full id.
	Resolve(ctx context.Context, idOrPrefix string, scopes ScopeFilter) (string, error)
	// Delete removes one memory by full id or prefix.
	Delete(ctx context.Context, idOrPrefix string, scopes ScopeFilter) (string, error)
	// Update changes a memory in place, atomically, keeping its id and
	// creation timestamp, and returns the result. Moving a memory to a scope
	// the filter does not allow fails with ErrScopeDenied.
	Update(ctx context.Context, idOrPrefix string, p Patch, scopes ScopeFilter) (schemas.Memory, error)
	// BulkDelete removes every memory matching f and returns how many.
	BulkDelete(ctx context.Context, f BulkFilter) (int, error)
	// CountBulk returns how many memories BulkDelete(f) would remove.
	CountBulk(ctx context.Context, f BulkFilter) (int, error)
	// List returns a page of memories, newest first, without vectors.
	List(ctx context.Context, o ListOptions) ([]schemas.Memory, error)
	// Stats counts the memories the filter allows.
	Stats(ctx context.Context, scopes ScopeFilter) (Stats, error)
	// AddedByDay counts the memories the filter allows (those that no
	// longer hold included) by the UTC day of their timestamp
	// ("2006-01-02"), from since (epoch ms) on.
	AddedByDay(ctx context.Context, scopes ScopeFilter, since int64) (map[string]int, error)
	// VectorSearch finds the memories nearest to vec by cosine similarity.
	VectorSearch(ctx context.Context, vec []float32, o SearchOptions) ([]SearchResult, error)
	// TextSearch is BM25 full-text search. Query syntax is not interpreted:
	// the query is a bag of words.
	TextSearch(ctx context.Context, query string, o SearchOptions) ([]SearchResult, error)
	// HasFullText reports whether TextSearch is available.
	HasFullText() bool
	// Iterate calls fn for every memory the options select, in no set order,
	// stopping at the first error fn returns.
	Iterate(ctx context.Context, o IterateOptions, fn func(schemas.Memory) error) error
	// WriteGeneration is a number that changes once a write to one of
	// f's scopes has completed — for AllScopes, any write — and never
	// goes back: a cache of what a read under f answered reads it before
	// the read starts, and the answer stands while the number is
	// unchanged. A write changes it only after everything it changed is
	// visible to reads; a write elsewhere may change it too (a backend
	// that keeps one counter for every scope). It counts this process's
	// writes only.
	WriteGeneration(f ScopeFilter) uint64
	// Close releases the store.
	Close() error
}

// IndexState is how a store holds its vectors, for operators; a store
// that can tell implements Describer.
type IndexState struct {
	Kind    string `json:"kind"` // exact, or ivf (approximate)
	Rows    int    `json:"rows"`
	Trained bool   `json:"trained"` // the approximate index is trained (else searches scan exactly)
	// TrainsAt is how many rows an approximate index trains at; until
	// then it searches exactly, as a small store should.
	TrainsAt int    `json:"trainsAt,omitempty"`
	Lists    int    `json:"lists,omitempty"`
	Probes   int    `json:"probes,omitempty"`
	Codes    string `json:"codes,omitempty"` // bits or int8
	// Memory is float32 or int8; Mapped: the vectors are mapped from the
	// vector segment; From is where the open loaded them from (segment or
	// database) and Why why not from the segment.
	Memory       string `json:"memory"`
	Mapped       bool   `json:"mapped"`
	From         string `json:"from,omitempty"`
	Why          string `json:"why,omitempty"`
	VectorBytes  int64  `json:"vectorBytes"`
	IndexBytes   int64  `json:"indexBytes"`
	SpillFailure string `json:"spillFailure,omitempty"`
}

// Describer is a Store that says how it holds its vectors.
type Describer interface {
	IndexState() IndexState
}

// Stamped gives ms, for Store.Add, fresh ids and the timestamp now.
func Stamped(ms []schemas.Memory, now int64) []schemas.Memory {
	out := make([]schemas.Memory, len(ms))
	for i, m := range ms {
		m.ID, m.Timestamp = uuid.NewString(), now
		out[i] = m
	}
	return out
}

// ForImport prepares ms for Store.Import: ids lower-cased (a fresh one
// where none is given, an error where one is not a UUID) and a missing
// timestamp set to now; everything else is kept as it is.
func ForImport(ms []schemas.Memory, now int64) ([]schemas.Memory, error) {
	out := make([]schemas.Memory, len(ms))
	for i, m := range ms {
		m.ID = strings.ToLower(m.ID)
		if m.ID == "" {
			m.ID = uuid.NewString()
		} else if !schemas.IsUUID(m.ID) {
			return nil, fmt.Errorf("%w: memory id %q is not a UUID", schemas.ErrInvalid, m.ID)
		}
		if m.Timestamp <= 0 {
			m.Timestamp = now
		}
		out[i] = m
	}
	return out, nil
}

// Neighborer is a store that can list the memories next to points in
// time, each in its scope: the turns around recalled ones, for
// session-neighbour expansion. For each point, Neighbors answers up to n
// current memories on each side of it within window milliseconds, with
// their vectors, nearest first on each side: all the points at once, as
// a recall asks for its best hits' neighbours together.
type Neighborer interface {
	Neighbors(ctx context.Context, at []TimePoint, n int, window int64) ([][]schemas.Memory, error)
}

// TimePoint is a moment (Unix milliseconds) in a scope.
type TimePoint struct {
	Scope string
	At    int64
}

// HybridSearcher is a store that runs a query's vector and full-text
// searches together: each answers exactly what VectorSearch and
// TextSearch answer, and a memory both found is read once.
type HybridSearcher interface {
	HybridSearch(ctx context.Context, vec []float32, query string, o SearchOptions) (byVector, byText []SearchResult, err error)
}

// Ranked is a search hit before its row is read: the store's key for it,
// its score as SearchResult has it, and whether the memory holds now
// (schemas.Memory.Current) as the index knows it.
type Ranked struct {
	Key        int64
	Score, Raw float64
	Current    bool
}

// RankedSearcher is a HybridSearcher that can rank without reading rows,
// so that a caller who keeps some of the hits reads only theirs.
type RankedSearcher interface {
	HybridSearcher
	// RankHybrid ranks as HybridSearch does; ok is false for a query it
	// cannot rank so (HybridSearch answers it).
	RankHybrid(ctx context.Context, vec []float32, query string, o SearchOptions) (byVector, byText []Ranked, ok bool, err error)
	// ReadRanked reads the memories of keys that o still allows, by key:
	// a memory deleted, moved out of o's scopes or (without o.History)
	// ended since it was ranked is missing.
	ReadRanked(ctx context.Context, keys []int64, o SearchOptions) (map[int64]schemas.Memory, error)
}

// Change is one committed change of a memory, as a store's change log
// holds it: the memory as it is now, or that it was deleted.
type Change struct {
	Rev     int64 // the change log's order
	ID      string
	Scope   string // the memory's scope (before its deletion)
	Deleted bool
	Memory  schemas.Memory // with its vector; zero when Deleted
}

// ChangeLogger is a store that records every committed change in the
// transaction that commits it, for the memory log.
type ChangeLogger interface {
	// Changes returns up to limit changes after rev, oldest first.
	Changes(ctx context.Context, after int64, limit int) ([]Change, error)
	// TrimChanges forgets the changes up to rev, once they are published,
	// and records in the same step that the log holds them up to logSeq
	// (0: not known), so a restart catches up from there.
	TrimChanges(ctx context.Context, upTo int64, logSeq uint64) error
	// LogAll records every memory as changed, for a log that starts empty
	// beside a store that does not (a store older than the log).
	LogAll(ctx context.Context) (int, error)
}

// LogApplier is a store built from the memory log (a replica, a rebuild).
type LogApplier interface {
	// ApplyLog puts and deletes memories and records seq as applied, all
	// or nothing.
	ApplyLog(ctx context.Context, seq uint64, puts []schemas.Memory, deletes []string) error
	// LogSeq is the last sequence applied (0: none).
	LogSeq(ctx context.Context) (uint64, error)
}

// Historian is a store that can walk a fact's history: the memories a
// memory superseded (their SupersededBy is its id).
type Historian interface {
	Predecessors(ctx context.Context, id string, scopes ScopeFilter) ([]schemas.Memory, error)
}

// CheckPatch refuses a patch no backend may apply under f: a new text
// without its new vector, or a move to a scope f does not allow.
func CheckPatch(p Patch, f ScopeFilter) error {
	if p.Text != nil && p.Vector == nil {
		return fmt.Errorf("%w: a new text needs its new vector", schemas.ErrInvalid)
	}
	if p.Scope != nil && !f.Allows(*p.Scope) {
		return fmt.Errorf("%w: cannot move a memory to %q", ErrScopeDenied, *p.Scope)
	}
	return nil
}

// ApplyPatch sets p's fields on m, then its Invalidate or Restore
// (ApplyLife); on an error m may be partly changed, so callers keep the
// memory as it was.
func ApplyPatch(m *schemas.Memory, p Patch) error {
	if p.Text != nil {
		m.Text = *p.Text
	}
	if p.Vector != nil {
		m.Vector = p.Vector
	}
	if p.Category != nil {
		m.Category = *p.Category
	}
	if p.Scope != nil {
		m.Scope = *p.Scope
	}
	if p.Importance != nil {
		m.Importance = *p.Importance
	}
	if p.Metadata != nil {
		m.Metadata = p.Metadata
	}
	return ApplyLife(m, p)
}

// ApplyLife applies a patch's Invalidate or Restore to m, checking them:
// a memory is superseded once (supersede the current one instead), never
// by itself, and only a memory that ended can be restored.
func ApplyLife(m *schemas.Memory, p Patch) error {
	switch {
	case p.Invalidate != nil && p.Restore:
		return fmt.Errorf("%w: a patch cannot both invalidate and restore", schemas.ErrInvalid)
	case p.Invalidate != nil:
		inv := *p.Invalidate
		switch {
		case !m.Current():
			return fmt.Errorf("%w: memory %s no longer holds (superseded by %q)", schemas.ErrInvalid, m.ID, m.SupersededBy)
		case inv.At <= 0:
			return fmt.Errorf("%w: invalidation time missing", schemas.ErrInvalid)
		case inv.SupersededBy != "" && !schemas.IsUUID(inv.SupersededBy):
			return fmt.Errorf("%w: supersededBy %q is not a memory id", schemas.ErrInvalid, inv.SupersededBy)
		case strings.EqualFold(inv.SupersededBy, m.ID):
			return fmt.Errorf("%w: a memory cannot supersede itself", schemas.ErrInvalid)
		}
		m.SupersededBy, m.InvalidatedAt = strings.ToLower(inv.SupersededBy), inv.At
	case p.Restore:
		if m.Current() {
			return fmt.Errorf("%w: memory %s holds already", schemas.ErrInvalid, m.ID)
		}
		m.SupersededBy, m.InvalidatedAt = "", 0
	}
	return nil
}
