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
}

// ContextRequest is auto-recall; TimeoutMs is the caller's deadline.
type ContextRequest struct {
	Prompt    string `json:"prompt"`
	TimeoutMs int    `json:"timeoutMs,omitempty"`
}

// StoreRequest is memory_store.
type StoreRequest struct {
	Text       string          `json:"text"`
	Importance *float64        `json:"importance,omitempty"`
	Category   string          `json:"category,omitempty"`
	Scope      string          `json:"scope,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
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
}

// StatsRequest is memory_stats.
type StatsRequest struct {
	Scope string `json:"scope,omitempty"`
}

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

// ErrorDetails is the details object of an error reply.
type ErrorDetails struct {
	Error string `json:"error"`
	Code  string `json:"code"` // invalid, not_found, ambiguous, denied, rejected, no_identity, internal
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
}

// View makes a MemoryView of m.
func View(m Memory) MemoryView {
	return MemoryView{ID: m.ID, Text: m.Text, Category: m.Category, Scope: m.Scope, Importance: m.Importance,
		Timestamp: m.Timestamp, Metadata: m.Metadata}
}
