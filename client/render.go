package client

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/internal/textutil"
	"github.com/clawmem/clawmem/schemas"
)

// RecallReply is a recall reply's details with each memory's score
// sources typed (the wire type leaves them open).
type RecallReply struct {
	Mode, Rerank string
	Memories     []struct {
		schemas.MemoryView
		Sources *retrieve.Sources `json:"sources"`
	}
}

// DecodeDetails decodes a reply's details into v.
func DecodeDetails(res schemas.ToolResult, v any) error {
	raw, err := json.Marshal(res.Details)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// WriteRecall prints a recall reply as the CLI's search does: one line
// per memory, and with explain where its score came from.
func WriteRecall(w io.Writer, res schemas.ToolResult, explain bool) error {
	var d RecallReply
	if err := DecodeDetails(res, &d); err != nil {
		return fmt.Errorf("unexpected recall reply: %w", err)
	}
	if len(d.Memories) == 0 {
		fmt.Fprintln(w, "No memories found.")
		return nil
	}
	fmt.Fprintf(w, "%d result(s) (mode %s, rerank %s)\n", len(d.Memories), d.Mode, d.Rerank)
	for i, m := range d.Memories {
		fmt.Fprintf(w, "%2d. [%s] %.0f%% [%s:%s] %s%s\n", i+1, m.ID[:8], m.Score*100, m.Category, m.Scope, textutil.OneLine(m.Text, 200), LifeNote(m.MemoryView))
		if explain && m.Sources != nil {
			fmt.Fprintf(w, "      %s  importance %.2f\n", m.Sources, m.Importance)
		}
	}
	return nil
}

// LifeNote marks a memory that no longer holds in CLI listings.
func LifeNote(v schemas.MemoryView) string {
	switch {
	case v.InvalidatedAt == 0:
		return ""
	case v.SupersededBy == "":
		return "  (archived " + time.UnixMilli(v.InvalidatedAt).UTC().Format(time.DateOnly) + ")"
	}
	return "  (superseded by " + shortID(v.SupersededBy) + " " + time.UnixMilli(v.InvalidatedAt).UTC().Format(time.DateOnly) + ")"
}

// ForgetReply is a forget reply's details: what was deleted, or the
// candidates to choose from.
type ForgetReply struct {
	Action     string // deleted or candidates
	Candidates []schemas.MemoryView
}

// WriteForget prints a forget reply as the CLI does. A deletion is the
// reply's own text (it says what was purged with it); candidates are
// listed like search results, with the hint in the CLI's own syntax: the
// reply's text names the tool's memoryId parameter, which a shell user
// cannot give.
func WriteForget(w io.Writer, res schemas.ToolResult) error {
	var d ForgetReply
	if err := DecodeDetails(res, &d); err != nil {
		return fmt.Errorf("unexpected forget reply: %w", err)
	}
	if d.Action != "candidates" {
		for _, c := range res.Content {
			fmt.Fprintln(w, c.Text)
		}
		return nil
	}
	if len(d.Candidates) == 0 {
		fmt.Fprintln(w, "No matching memories found; nothing was deleted.")
		return nil
	}
	fmt.Fprintf(w, "No single clear match; nothing was deleted. %d candidate(s):\n", len(d.Candidates))
	for i, m := range d.Candidates {
		fmt.Fprintf(w, "%2d. [%s] %.0f%% [%s:%s] %s\n", i+1, shortID(m.ID), m.Score*100, m.Category, m.Scope, textutil.OneLine(m.Text, 200))
	}
	fmt.Fprintf(w, "Delete one with: clawmem forget ID (e.g. clawmem forget %s)\n", shortID(d.Candidates[0].ID))
	return nil
}

// shortID is the 8-character prefix the CLI shows and accepts for an id.
func shortID(id string) string { return id[:min(8, len(id))] }

// WriteShow prints a show reply for a person: the memory field by field
// (its text, category, scope, importance, when it was created, whether it
// still holds, its metadata), then the facts that replaced it and those it
// replaced, one line each, newest first.
func WriteShow(w io.Writer, res schemas.ToolResult) error {
	var d schemas.ShowDetails
	if err := DecodeDetails(res, &d); err != nil {
		return fmt.Errorf("unexpected show reply: %w", err)
	}
	m := d.Memory
	field := func(name, value string) {
		// A value of several lines keeps its lines under the first.
		fmt.Fprintf(w, "%-12s%s\n", name+":", strings.ReplaceAll(value, "\n", "\n"+strings.Repeat(" ", 12)))
	}
	field("id", m.ID)
	field("text", m.Text)
	field("category", string(m.Category))
	field("scope", m.Scope)
	field("importance", strconv.FormatFloat(m.Importance, 'f', 2, 64))
	field("created", stamp(m.Timestamp))
	if m.ValidFrom != 0 {
		field("valid from", stamp(m.ValidFrom))
	}
	switch {
	case m.InvalidatedAt == 0:
		field("status", "current")
	case m.SupersededBy == "":
		field("status", "archived "+stamp(m.InvalidatedAt))
	default:
		field("status", "superseded by "+shortID(m.SupersededBy)+" "+stamp(m.InvalidatedAt))
	}
	if meta := metadataText(m.Metadata); meta != "" {
		field("metadata", meta)
	}
	// ReplacedBy runs oldest first up to the fact that holds now: newest
	// first reads down the chain from now.
	for i := len(d.ReplacedBy) - 1; i >= 0; i-- {
		v := d.ReplacedBy[i]
		fmt.Fprintf(w, "replaced by [%s] %s  %s\n", shortID(v.ID), time.UnixMilli(v.Timestamp).UTC().Format(time.DateOnly), textutil.OneLine(v.Text, 200))
	}
	for _, v := range d.Replaced {
		fmt.Fprintf(w, "replaced [%s] %s  %s\n", shortID(v.ID), time.UnixMilli(v.Timestamp).UTC().Format(time.DateOnly), textutil.OneLine(v.Text, 200))
	}
	return nil
}

// stamp is a memory's time (Unix milliseconds) as a person reads it.
func stamp(ms int64) string {
	if ms == 0 {
		return "unknown"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04 UTC")
}

// metadataText is a memory's metadata, one "key: value" line per key of
// an object, else its JSON; "" when there is none.
func metadataText(raw json.RawMessage) string {
	var obj map[string]json.RawMessage
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return string(raw)
	}
	if len(obj) == 0 {
		return ""
	}
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		v := string(obj[k])
		var s string
		if json.Unmarshal(obj[k], &s) == nil {
			v = s
		}
		lines = append(lines, k+": "+v)
	}
	return strings.Join(lines, "\n")
}

// WriteContext prints a context reply as the model gets it: the block
// alone on w, so that it can be piped or compared; on note, why there is
// no block, and whether the deadline cut the recall short.
func WriteContext(w, note io.Writer, res schemas.ToolResult) error {
	var d schemas.ContextDetails
	if err := DecodeDetails(res, &d); err != nil {
		return fmt.Errorf("unexpected context reply: %w", err)
	}
	if d.TimedOut {
		fmt.Fprintln(note, "Auto-recall ran out of time (timeoutMs): the block holds what was ready by then.")
	}
	if d.PrependContext == "" {
		why := "no memory passed the auto-recall gate (retrieval.autoRecallMinScore, autoRecallMinMargin)"
		if d.Skipped != "" {
			why = d.Skipped
		}
		fmt.Fprintln(note, "No memories for this prompt: the model gets nothing ("+why+").")
		return nil
	}
	fmt.Fprintln(w, strings.TrimRight(d.PrependContext, "\n"))
	return nil
}
