package schemas

import "encoding/json"

// Service requests. Field names are the OpenClaw tools' parameters, so a
// bridge can forward tool arguments unchanged. The agent comes from the
// subject, never from the body.

// RecallRequest is memory_recall.
type RecallRequest struct {
	Query    string `json:"query"`
	Limit    int    `json:"limit,omitempty"`
	Scope    string `json:"scope,omitempty"`
	Category string `json:"category,omitempty"`
	// IncludeSuperseded also searches memories that no longer hold.
	IncludeSuperseded bool `json:"includeSuperseded,omitempty"`
	// AfterSeq, on a replicated deployment, asks the replica that answers
	// to have applied the memory log up to this sequence (a write's reply
	// says it as logSeq): read-your-writes. 0: whatever it holds.
	AfterSeq uint64 `json:"afterSeq,omitempty"`
}

// ContextRequest is auto-recall; TimeoutMs is the caller's deadline.
type ContextRequest struct {
	Prompt    string `json:"prompt"`
	TimeoutMs int    `json:"timeoutMs,omitempty"`
	// AfterSeq, on a replicated deployment, asks the replica that answers
	// to have applied the memory log up to this sequence (a write's reply
	// says it as logSeq): read-your-writes. 0: whatever it holds.
	AfterSeq uint64 `json:"afterSeq,omitempty"`
	// TokenBudget bounds the block, framing included, in estimated
	// tokens; 0: the configured retrieval.recallTokenBudget.
	TokenBudget int `json:"tokenBudget,omitempty"`
	// Exclude lists the memory ids the caller injected in this session's
	// last turns (at most 64): they are left out unless the prompt asks
	// about them again. Core facts are always included.
	Exclude []string `json:"exclude,omitempty"`
}

// StoreRequest is memory_store.
type StoreRequest struct {
	Text       string          `json:"text"`
	Importance *float64        `json:"importance,omitempty"`
	Category   string          `json:"category,omitempty"`
	Scope      string          `json:"scope,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	// Supersedes is the id (or 8+ char prefix) of a memory the new one
	// replaces; the old one stays in the chain as history.
	Supersedes string `json:"supersedes,omitempty"`
}

// ForgetRequest is memory_forget.
type ForgetRequest struct {
	MemoryID string `json:"memoryId,omitempty"`
	Query    string `json:"query,omitempty"`
	Scope    string `json:"scope,omitempty"`
}

// UpdateRequest is memory_update.
type UpdateRequest struct {
	MemoryID   string   `json:"memoryId"`
	Text       *string  `json:"text,omitempty"`
	Importance *float64 `json:"importance,omitempty"`
	Category   *string  `json:"category,omitempty"`
	Scope      string   `json:"scope,omitempty"`
}

// ListRequest is memory_list.
type ListRequest struct {
	Scope    string `json:"scope,omitempty"`
	Category string `json:"category,omitempty"`
	Limit    int    `json:"limit,omitempty"`
	Offset   int    `json:"offset,omitempty"`
	// IncludeSuperseded also lists memories that no longer hold.
	IncludeSuperseded bool `json:"includeSuperseded,omitempty"`
	// Since and Until bound the memories' timestamps (epoch ms): since ≤
	// timestamp < until; 0 leaves that side open.
	Since int64 `json:"since,omitempty"`
	Until int64 `json:"until,omitempty"`
	// Text keeps the memories whose text contains it, ignoring case.
	Text string `json:"text,omitempty"`
	// Session keeps the memories whose metadata names this session (the
	// lessons distilled from it, the turns captured in it).
	Session string `json:"session,omitempty"`
	// Cursor is a previous page's nextCursor: the page after it, found
	// as fast at any depth (Offset reads every row before the page).
	Cursor string `json:"cursor,omitempty"`
	// AfterSeq, on a replicated deployment, asks the replica that answers
	// to have applied the memory log up to this sequence (a write's reply
	// says it as logSeq): read-your-writes. 0: whatever it holds.
	AfterSeq uint64 `json:"afterSeq,omitempty"`
}

// ShowRequest is memory_show: one memory with the chain of facts it
// replaced and that replaced it.
type ShowRequest struct {
	MemoryID string `json:"memoryId"`
	// AfterSeq, on a replicated deployment, asks the replica that answers
	// to have applied the memory log up to this sequence (a write's reply
	// says it as logSeq): read-your-writes. 0: whatever it holds.
	AfterSeq uint64 `json:"afterSeq,omitempty"`
}

// StatsRequest is memory_stats.
type StatsRequest struct {
	Scope string `json:"scope,omitempty"`
	// Days, when set (1–366), adds the memories added on each of the last
	// Days days (UTC) as byDay.
	Days int `json:"days,omitempty"`
	// AfterSeq, on a replicated deployment, asks the replica that answers
	// to have applied the memory log up to this sequence (a write's reply
	// says it as logSeq): read-your-writes. 0: whatever it holds.
	AfterSeq uint64 `json:"afterSeq,omitempty"`
}

// Admin-only operations, served on clawmem.admin.v1.<op> and never per
// agent: they read or write every scope in bulk.
const (
	OpExport     = "export"
	OpImport     = "import"
	OpDeleteBulk = "delete-bulk"
)

// AdminOps lists the admin-only operations.
var AdminOps = []string{OpExport, OpImport, OpDeleteBulk, OpConsolidate}

// OpConsolidate merges near-duplicates and archives faded memories (admin).
const OpConsolidate = "consolidate"

// ConsolidateRequest is a consolidation run: every scope, or one.
type ConsolidateRequest struct {
	Scope        string  `json:"scope,omitempty"`
	DryRun       bool    `json:"dryRun,omitempty"`
	MergeMin     float64 `json:"mergeMin,omitempty"`     // default 0.90
	ArchiveFloor float64 `json:"archiveFloor,omitempty"` // 0: archive nothing
	HalfLifeDays float64 `json:"archiveHalfLifeDays,omitempty"`
}

// ExportRequest pages through memories (admin). The first request has no
// cursor and starts an export; each reply's nextCursor asks for the next
// page, and asking with the same cursor again repeats that page, so a lost
// reply costs nothing. A reply without nextCursor is the last page. Scope
// and WithVectors are read from the first request only.
type ExportRequest struct {
	Cursor      string `json:"cursor,omitempty"`
	Limit       int    `json:"limit,omitempty"`
	Scope       string `json:"scope,omitempty"`
	WithVectors bool   `json:"withVectors,omitempty"`
}

// ImportRequest stores a batch of memories (admin) keeping their ids and
// timestamps. A memory without a vector of the store's size is embedded; an
// id that exists is skipped; a near-duplicate (0.95) of a memory in its
// scope is skipped unless NoDedup. Scope, when set, replaces every memory's
// scope. SkipExisting leaves rows skipped for an existing id out of the
// reply's results (they are still counted).
type ImportRequest struct {
	Memories     []Memory `json:"memories"`
	Scope        string   `json:"scope,omitempty"`
	SkipExisting bool     `json:"skipExisting,omitempty"`
	DryRun       bool     `json:"dryRun,omitempty"`
	NoDedup      bool     `json:"noDedup,omitempty"`
}

// DeleteBulkRequest deletes every memory in Scope created before Before
// (epoch ms, exclusive) (admin). At least one of the two must be set;
// DryRun only counts.
type DeleteBulkRequest struct {
	Scope  string `json:"scope,omitempty"`
	Before int64  `json:"before,omitempty"`
	DryRun bool   `json:"dryRun,omitempty"`
}

// Limits of the service's requests, which the service enforces and a
// client sizes its requests by.
const (
	// MaxRequestBytes bounds a request body. The largest legitimate
	// request is a memory_store of 64 KB text with 64 KB metadata; anything
	// near a megabyte is a mistake or an attack, refused before decoding.
	MaxRequestBytes = 1 << 20
	// MaxRecallLimit caps memory_recall's limit, as the plugin's tool does.
	MaxRecallLimit = 20
	// ExportDefaultLimit and ExportMaxLimit bound an export page;
	// a page also stops short of the NATS payload limit.
	ExportDefaultLimit = 1000
	ExportMaxLimit     = 10000
	// MaxImportBatch bounds the memories of one import request.
	MaxImportBatch = 10000
)
