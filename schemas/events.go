package schemas

import (
	"encoding/json"
	"slices"
	"strings"
)

// Version is the version of every message body clawmem defines; a body
// with another "v" is refused, so old workers never misread new messages.
const Version = 1

// EventKind names a hook event. OpenClaw's "command:new" is command_new
// here, since kinds are subject tokens.
type EventKind string

// Hook events clawmem receives (SPEC §3).
const (
	KindAgentEnd          EventKind = "agent_end"
	KindBeforePromptBuild EventKind = "before_prompt_build"
	KindBeforeAgentStart  EventKind = "before_agent_start"
	KindCommandNew        EventKind = "command_new"
	KindCommandReset      EventKind = "command_reset"
	KindBeforeReset       EventKind = "before_reset"
	// KindBeforeCompaction is OpenClaw's before_compaction: the messages
	// about to be summarised away, distilled before they go.
	KindBeforeCompaction EventKind = "before_compaction"
	KindSessionEnd       EventKind = "session_end"
	KindMessageReceived  EventKind = "message_received"
	KindMessageSent      EventKind = "message_sent"
)

// EventKinds lists every kind.
var EventKinds = []EventKind{KindAgentEnd, KindBeforePromptBuild, KindBeforeAgentStart, KindCommandNew,
	KindCommandReset, KindBeforeReset, KindBeforeCompaction, KindSessionEnd, KindMessageReceived, KindMessageSent}

// Valid reports a known kind.
func (k EventKind) Valid() bool { return slices.Contains(EventKinds, k) }

// ParseEventKind accepts OpenClaw's spelling too ("command:new", "agent-end").
func ParseEventKind(s string) (EventKind, bool) {
	k := EventKind(strings.NewReplacer(":", "_", "-", "_").Replace(strings.ToLower(strings.TrimSpace(s))))
	return k, k.Valid()
}

// MaxEventBytes bounds one hook event; an agent_end carries the whole
// in-context history, which can be large, but not unbounded.
const MaxEventBytes = 4 << 20

// HookEvent is the envelope of every event on the EVENTS stream. The agent
// is the subject's last token; AgentID in the body is informational only.
type HookEvent struct {
	V          int             `json:"v"`
	Kind       EventKind       `json:"kind"`
	AgentID    string          `json:"agentId,omitempty"`
	SessionKey string          `json:"sessionKey,omitempty"`
	SessionID  string          `json:"sessionId,omitempty"`
	RunID      string          `json:"runId,omitempty"`
	ChannelID  string          `json:"channelId,omitempty"`
	Timestamp  int64           `json:"ts"`
	Event      json.RawMessage `json:"event"`
}

// Message is one OpenClaw chat message. Content is a string or an array of
// blocks ({type:"text",text}, {type:"image",...}, {type:"toolCall",...}).
type Message struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Timestamp int64           `json:"timestamp,omitempty"`
	ID        string          `json:"id,omitempty"`
}

// ContentBlock is one block of a message's content.
type ContentBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

// Text joins the message's text blocks with newlines; other blocks (images,
// tool calls, thinking) carry no memory and are skipped.
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var blocks []ContentBlock
	if json.Unmarshal(m.Content, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if (b.Type == "text" || b.Type == "") && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// AgentEndEvent is agent_end: messages is the whole in-context history.
type AgentEndEvent struct {
	Messages   []Message `json:"messages"`
	Success    bool      `json:"success"`
	Error      string    `json:"error,omitempty"`
	DurationMs int64     `json:"durationMs,omitempty"`
}

// PromptBuildEvent is before_prompt_build / before_agent_start.
type PromptBuildEvent struct {
	Prompt   string    `json:"prompt"`
	Messages []Message `json:"messages,omitempty"`
}

// SessionEvent covers command_new, command_reset, before_reset,
// before_compaction and session_end: the triggers of session distillation.
type SessionEvent struct {
	SessionID     string    `json:"sessionId,omitempty"`
	SessionFile   string    `json:"sessionFile,omitempty"`
	Messages      []Message `json:"messages,omitempty"`
	MessageCount  int       `json:"messageCount,omitempty"`
	Reason        string    `json:"reason,omitempty"`
	NextSessionID string    `json:"nextSessionId,omitempty"`
}

// MessageEvent is message_received / message_sent (HOOK.md handlers).
type MessageEvent struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
	From    string `json:"from,omitempty"`
}

// CaptureItem is one memory candidate the capture worker hands the store
// worker. SourceID makes storing it idempotent: the memory's id is derived
// from it, so a redelivered item never makes a second row.
type CaptureItem struct {
	SourceID   string          `json:"sourceId"`
	Text       string          `json:"text"`
	Category   Category        `json:"category"`
	Scope      string          `json:"scope,omitempty"`
	Importance float64         `json:"importance"`
	Vector     []float32       `json:"vector,omitempty"`
	Dedup      float64         `json:"dedup"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	// Supersedes is the id of a memory the new one replaces (smart
	// extraction's UPDATE).
	Supersedes string `json:"supersedes,omitempty"`
	// Invalidates, when set, makes the item no memory at all: the memory
	// with this id stops holding (smart extraction's DELETE); Text says why,
	// and Scope, when set, is that memory's scope (whose writer ends it).
	Invalidates string `json:"invalidates,omitempty"`
}

// WorkBatch is a message on the WORK stream: items for one agent.
type WorkBatch struct {
	V       int           `json:"v"`
	AgentID string        `json:"agentId"`
	Source  string        `json:"source"` // capture, distill, import
	Items   []CaptureItem `json:"items"`
}

// TranscriptEntry is one user or assistant message of a session transcript
// on the TRANSCRIPTS stream. Offset is the byte offset of the line in its
// file, so a watcher can resume exactly after a restart.
type TranscriptEntry struct {
	V         int    `json:"v"`
	AgentID   string `json:"agentId"`
	SessionID string `json:"sessionId"`
	File      string `json:"file,omitempty"`
	Offset    int64  `json:"offset"`
	EntryID   string `json:"entryId,omitempty"`
	Role      string `json:"role"`
	Text      string `json:"text"`
	Timestamp int64  `json:"timestamp"`
}
