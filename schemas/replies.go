package schemas

import (
	"encoding/json"
	"time"
)

// Service replies. Every reply is a ToolResult; its details are the
// operation's ...Details below, or ErrorDetails for an error. These are the
// shapes clients decode, so the query service builds its replies from them
// and nothing else: a field added here is a field on the wire.
//
// On a replicated deployment a write's details (store, forget, update,
// import, delete-bulk, consolidate) also carry logSeq, the memory log's
// sequence that holds the change; a later read asks for it as afterSeq.

// TextContent is one content item of a tool result.
type TextContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ToolResult is every service reply, shaped like an OpenClaw tool result so
// a bridge passes it through: content for the model, details for code.
// Errors are replies too, with IsError and an error code in Details.
type ToolResult struct {
	Content []TextContent `json:"content"`
	Details any           `json:"details,omitempty"`
	IsError bool          `json:"isError,omitempty"`
}

// Reply is a successful tool result with text and details, as the query
// service answers; other endpoints that answer like it (the backup job's)
// use it too.
func Reply(text string, details any) ToolResult {
	return ToolResult{Content: []TextContent{{Type: "text", Text: text}}, Details: details}
}

// Failure is an error reply: msg for the model, and in the details msg
// again, code (one of Codes) and, for CodeAmbiguous, the ids matched.
func Failure(code, msg string, matches []string) ToolResult {
	return ToolResult{
		Content: []TextContent{{Type: "text", Text: msg}},
		Details: ErrorDetails{Error: msg, Code: code, Matches: matches},
		IsError: true,
	}
}

// ErrorDetails is the details object of an error reply.
type ErrorDetails struct {
	Error string `json:"error"`
	Code  string `json:"code"` // one of Codes
	// Matches are the ids an ambiguous id prefix matched (CodeAmbiguous).
	Matches []string `json:"matches,omitempty"`
}

// MemoryView is a memory as replies show it: no vector.
type MemoryView struct {
	ID         string          `json:"id"`
	Text       string          `json:"text"`
	Category   Category        `json:"category"`
	Scope      string          `json:"scope"`
	Importance float64         `json:"importance"`
	Timestamp  int64           `json:"timestamp"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	Score      float64         `json:"score,omitempty"`
	Sources    any             `json:"sources,omitempty"`
	// History: set only for a memory that no longer holds or has a start.
	SupersededBy  string `json:"supersededBy,omitempty"`
	ValidFrom     int64  `json:"validFrom,omitempty"`
	InvalidatedAt int64  `json:"invalidatedAt,omitempty"`
}

// View makes a MemoryView of m.
func View(m Memory) MemoryView {
	return MemoryView{ID: m.ID, Text: m.Text, Category: m.Category, Scope: m.Scope, Importance: m.Importance,
		Timestamp: m.Timestamp, Metadata: m.Metadata, SupersededBy: m.SupersededBy, ValidFrom: m.ValidFrom,
		InvalidatedAt: m.InvalidatedAt}
}

// RecallDetails is memory_recall's details.
type RecallDetails struct {
	Count    int          `json:"count"`
	Memories []MemoryView `json:"memories"`
	Mode     string       `json:"mode,omitempty"`   // hybrid, vector or bm25, after any fallback
	Rerank   string       `json:"rerank,omitempty"` // what the rerank stage did
	// Fallback says why recall ran degraded: the embedder is down and it
	// answered from BM25 alone.
	Fallback string `json:"fallback,omitempty"`
}

// ContextDetails is the context endpoint's details: PrependContext is
// what the before_prompt_build hook returns.
type ContextDetails struct {
	PrependContext string `json:"prependContext"`
	Count          int    `json:"count"`
	// MemoryIDs are the recalled memories in the block, which the caller
	// sends back as exclude in its next turns; CoreIDs its core facts.
	MemoryIDs []string `json:"memoryIds,omitempty"`
	CoreIDs   []string `json:"coreIds,omitempty"`
	Skipped   string   `json:"skipped,omitempty"`
	TimedOut  bool     `json:"timedOut,omitempty"`
}

// ListDetails is memory_list's details.
type ListDetails struct {
	Count    int          `json:"count"`
	Offset   int          `json:"offset"`
	Memories []MemoryView `json:"memories"`
	// NextCursor asks for the next page (ListRequest.Cursor); absent on a
	// page that is not full, the last.
	NextCursor string `json:"nextCursor,omitempty"`
}

// ShowDetails is memory_show's details: the memory, the memories it
// replaced (newest first, back to the first), and those that replaced it
// (oldest first, up to the one that holds now).
type ShowDetails struct {
	Memory     MemoryView   `json:"memory"`
	Replaced   []MemoryView `json:"replaced,omitempty"`
	ReplacedBy []MemoryView `json:"replacedBy,omitempty"`
}

// StatsDetails is memory_stats' details: the caller's memories counted,
// how recall is set up, the store's health and the caller's dead letters.
// Its parts mirror the engine's figures field for field: the query service
// converts those into these, which fails to compile when a field is added
// to one and not the other, and a test there compares the two's JSON.
type StatsDetails struct {
	// Total, ByScope and ByCategory count memories that hold; History
	// counts the superseded and archived ones besides.
	History    int            `json:"history"`
	Total      int            `json:"total"`
	ByScope    map[string]int `json:"byScope"`
	ByCategory map[string]int `json:"byCategory"`
	// Scopes are the scopes the caller reads; absent for an operator's
	// call, which reads every scope.
	Scopes    []string        `json:"accessibleScopes,omitempty"`
	FullText  bool            `json:"hasFtsSupport"`
	Retrieval RetrievalConfig `json:"retrieval"`
	// Rerank is the rerank recall applies: the configured mode, or
	// cosine-fallback for a cross-encoder without an endpoint.
	Rerank       string               `json:"rerankMode"`
	Embedding    string               `json:"embeddingModel"`
	Dimensions   int                  `json:"dimensions"`
	ScopeConfig  ScopeStats           `json:"scopeStats"`
	EmbedderInfo *EmbeddingCacheStats `json:"embeddingCache,omitempty"`
	// RecallCache is the recall cache's use (retrieval.recallCache);
	// absent when it is off.
	RecallCache *RecallCacheStats `json:"recallCache,omitempty"`
	// ByDay is the memories added on each day asked for (StatsRequest.Days).
	ByDay map[string]int `json:"byDay,omitempty"`
	// Index is how the store holds its vectors, for an operator's call
	// when the store can tell.
	Index *IndexState `json:"index,omitempty"`
	// EmbedderOK is false while the embedder's last query failed and
	// recall runs on BM25 alone; EmbedderError says why.
	EmbedderOK    bool   `json:"embedderOk"`
	EmbedderError string `json:"embedderError,omitempty"`
	// LastMemoryAt is when the newest memory (holding or history) in the
	// caller's scopes was stored, unix ms; 0 when there is none.
	LastMemoryAt int64 `json:"lastMemoryAt,omitempty"`
	// IndexKind is exact or ivf, and IndexTrained whether the approximate
	// index is trained; empty when the store cannot tell.
	IndexKind    string `json:"indexKind,omitempty"`
	IndexTrained bool   `json:"indexTrained,omitempty"`
	// DeadLetters counts the caller's hook events and transcript entries
	// that exhausted their deliveries (clawmem dlq list shows them); nil
	// when the dead-letter stream cannot be read, and for an operator.
	DeadLetters *int `json:"deadLetters,omitempty"`
}

// RetrievalConfig is the retrieval configuration recall runs with: the
// configuration file's retrieval.* keys, whose meaning the engine's
// retrieve.Config documents.
type RetrievalConfig struct {
	Mode                  string  `json:"mode"`
	VectorWeight          float64 `json:"vectorWeight"`
	BM25Weight            float64 `json:"bm25Weight"`
	MinScore              float64 `json:"minScore"`
	Rerank                string  `json:"rerank"`
	CandidatePoolSize     int     `json:"candidatePoolSize"`
	RecencyHalfLifeDays   float64 `json:"recencyHalfLifeDays"`
	RecencyWeight         float64 `json:"recencyWeight"`
	FilterNoise           bool    `json:"filterNoise"`
	LengthNormAnchor      float64 `json:"lengthNormAnchor"`
	HardMinScore          float64 `json:"hardMinScore"`
	TimeDecayHalfLifeDays float64 `json:"timeDecayHalfLifeDays"`
	AutoRecallMinScore    float64 `json:"autoRecallMinScore"`
	AutoRecallMinMargin   float64 `json:"autoRecallMinMargin"`
	NeighborHits          int     `json:"neighborHits"`
	NeighborsPerSide      int     `json:"neighborsPerSide"`
	NeighborFactor        float64 `json:"neighborFactor"`
	NeighborWindowMinutes float64 `json:"neighborWindowMinutes"`
	EntityHits            int     `json:"entityHits"`
	EntityFactor          float64 `json:"entityFactor"`
	TemporalBoost         float64 `json:"temporalBoost"`
	RelativeFactor        float64 `json:"relativeFactor"`
	Fusion                string  `json:"fusion"`
	BM25Norm              string  `json:"bm25Norm"`
	RecallTokenBudget     int     `json:"recallTokenBudget"`
	CoreFacts             int     `json:"coreFacts"`
}

// ScopeStats describes the configured scopes.
type ScopeStats struct {
	TotalScopes            int            `json:"totalScopes"`
	AgentsWithCustomAccess int            `json:"agentsWithCustomAccess"`
	ScopesByType           map[string]int `json:"scopesByType"`
}

// EmbeddingCacheStats is the embedding cache's use, for embedders that
// cache vectors.
type EmbeddingCacheStats struct {
	Size    int     `json:"size"`
	Hits    uint64  `json:"hits"`
	Misses  uint64  `json:"misses"`
	HitRate float64 `json:"hitRate"`
}

// RecallCacheStats is the recall cache's use: answers kept, and recalls
// answered from it (hits) or computed (misses).
type RecallCacheStats struct {
	Size    int     `json:"size"`
	Hits    uint64  `json:"hits"`
	Misses  uint64  `json:"misses"`
	HitRate float64 `json:"hitRate"`
}

// IndexState is how the store holds its vectors.
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

// StoreDetails is memory_store's details. ID is the memory the text now
// lives in: the new one, or for a duplicate the existing one (ExistingID).
type StoreDetails struct {
	Action     string   `json:"action"` // created or duplicate
	ID         string   `json:"id"`
	Scope      string   `json:"scope"`
	Category   Category `json:"category"`
	ExistingID string   `json:"existingId,omitempty"`
	Similarity float64  `json:"similarity,omitempty"`
	Superseded []string `json:"superseded,omitempty"` // memories the new one replaced
}

// ForgetDetails is memory_forget's details.
type ForgetDetails struct {
	Action     string       `json:"action"` // deleted or candidates
	ID         string       `json:"id,omitempty"`
	Candidates []MemoryView `json:"candidates,omitempty"`
	// Purged is how many stream messages holding the memory's text were
	// securely deleted (events, transcript entries, dead letters);
	// PurgeNote says what was left and why.
	Purged    int    `json:"purged"`
	PurgeNote string `json:"purgeNote,omitempty"`
}

// UpdateDetails is memory_update's details.
type UpdateDetails struct {
	Action     string       `json:"action"` // updated or candidates
	ID         string       `json:"id,omitempty"`
	Memory     *MemoryView  `json:"memory,omitempty"`
	Candidates []MemoryView `json:"candidates,omitempty"`
}

// ExportDetails is an export page: the memories in clawmem's export
// shape ({id,text,category,scope,importance,timestamp,metadata[,vector]}),
// and the cursor of the next page, empty after the last.
type ExportDetails struct {
	Page       int               `json:"page"`
	Count      int               `json:"count"`
	Memories   []json.RawMessage `json:"memories"`
	NextCursor string            `json:"nextCursor,omitempty"`
}

// ImportDetails is an import batch's outcome. Results lists the rows
// not imported (their line is the memory's 1-based position in the
// request), leaving out rows skipped for an existing id when the request
// said skipExisting.
type ImportDetails struct {
	Imported   int            `json:"imported"`
	Skipped    int            `json:"skipped"`
	Failed     int            `json:"failed"`
	Exists     int            `json:"exists"`
	Duplicates int            `json:"duplicates"`
	Results    []ImportResult `json:"results"`
	DryRun     bool           `json:"dryRun,omitempty"`
}

// ImportResult is one row's outcome: Status is imported, skipped or
// failed, and Reason why (for a skip, exists or duplicate). For a
// duplicate, DuplicateOf is the memory it duplicates and Similarity their
// vector score.
type ImportResult struct {
	Line        int     `json:"line,omitempty"`
	ID          string  `json:"id,omitempty"`
	Status      string  `json:"status"`
	Reason      string  `json:"reason,omitempty"`
	DuplicateOf string  `json:"duplicateOf,omitempty"`
	Similarity  float64 `json:"similarity,omitempty"`
}

// DeleteBulkDetails is delete-bulk's outcome: Count memories deleted,
// or with DryRun the number that would be.
type DeleteBulkDetails struct {
	Count  int    `json:"count"`
	DryRun bool   `json:"dryRun,omitempty"`
	Scope  string `json:"scope,omitempty"`
	Before int64  `json:"before,omitempty"`
	// Purged and PurgeNote: as ForgetDetails', for every memory deleted.
	Purged    int    `json:"purged"`
	PurgeNote string `json:"purgeNote,omitempty"`
}

// ConsolidateDetails says what a consolidation run did (or, dry, would
// do): the memories it looked at, the groups it merged, the memories it
// archived.
type ConsolidateDetails struct {
	Scanned  int                `json:"scanned"`
	Merges   []ConsolidateMerge `json:"merges"`
	Archived []string           `json:"archived"`
	DryRun   bool               `json:"dryRun"`
}

// ConsolidateMerge is one merged group: the memory made of it and the
// memories it supersedes.
type ConsolidateMerge struct {
	Into    string   `json:"into"`    // the merged memory's id
	Text    string   `json:"text"`    // its text
	Sources []string `json:"sources"` // the memories it supersedes
}

// EndpointStats is the data of a query service endpoint in its $SRV.STATS
// reply, which `clawmem status` reads: what micro cannot see, since it
// times only the hand-off to the worker pool.
type EndpointStats struct {
	InFlight              int64         `json:"in_flight"`
	Handled               uint64        `json:"handled"`
	ErrorReplies          uint64        `json:"error_replies"`
	AverageProcessingTime time.Duration `json:"average_processing_time"`
	// LogSeq is how far this instance's copy has the memory log: a
	// replica's applied sequence, the writer's published one.
	LogSeq uint64 `json:"log_seq,omitempty"`
	// Role is "writer" or "replica" in a replicated deployment.
	Role string `json:"role,omitempty"`
}
