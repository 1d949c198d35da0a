package query

// Reading operations: recall, context (auto-recall), list, stats, show.

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/engine/temporal"
	"github.com/clawmem/clawmem/internal/textutil"
	"github.com/clawmem/clawmem/schemas"
)

func (s *Service) opRecall(req request) (okReply, error) {
	ctx, who, data := req.ctx, req.who, req.data
	var r recallBody
	if err := decode(data, &r); err != nil {
		return okReply{}, err
	}
	cat, err := parseCategory(r.Category)
	if err != nil {
		return okReply{}, err
	}
	limit := r.Limit
	switch {
	case limit < 0:
		return okReply{}, fmt.Errorf("%w: limit %d is negative", schemas.ErrInvalid, limit)
	case limit == 0:
		limit = defaultRecallLimit
	}
	limit = min(limit, schemas.MaxRecallLimit)
	res, err := s.eng.Recall(ctx, who, r.Query, memory.RecallOptions{Limit: limit, Scope: r.Scope, Category: cat, History: r.IncludeSuperseded})
	if err != nil {
		return okReply{}, err
	}
	views := memoryViews(res.Candidates)
	d := schemas.RecallDetails{Count: len(views), Memories: views, Mode: res.Mode, Rerank: res.Rerank, Fallback: res.Fallback}
	if len(views) == 0 {
		return okReply{text: "No relevant memories found." + fallbackNote(res.Fallback), details: d}, nil
	}
	lines := make([]rules.FramedMemory, len(res.Candidates))
	for i, c := range res.Candidates {
		note := life(schemas.View(c.Memory))
		if dates := temporal.NoteFor(c.Memory.Metadata, c.Memory.Text, c.Memory.Timestamp); dates != "" {
			note += " [" + rules.EscapeMemoryText(dates, 0) + "]"
		}
		lines[i] = rules.FramedMemory{Label: fmt.Sprintf("%d. %s", i+1, label(c.Memory.Category, c.Memory.Scope)), Text: c.Memory.Text,
			Note: note + fmt.Sprintf(" (%.0f%%%s)", c.Score*100, sourceSuffix(c.Sources))}
	}
	text := fmt.Sprintf("Found %d %s%s:\n", len(views), plural(len(views), "memory", "memories"), fallbackNote(res.Fallback)) +
		rules.FrameMemories(lines, 0)
	return okReply{text: text, details: d}, nil
}

// fallbackNote tells the reader of a recall that it ran degraded.
func fallbackNote(why string) string {
	if why == "" {
		return ""
	}
	return " (by keywords only: " + why + ")"
}

func (s *Service) opContext(req request) (okReply, error) {
	base, who, data, received := req.base, req.who, req.data, req.received
	var r contextBody
	if err := decode(data, &r); err != nil {
		return okReply{}, err
	}
	if r.TimeoutMs < 0 {
		return okReply{}, fmt.Errorf("%w: timeoutMs %d is negative", schemas.ErrInvalid, r.TimeoutMs)
	}
	timeout := s.cfg.DefaultContextTimeout
	if r.TimeoutMs > 0 {
		timeout = min(time.Duration(r.TimeoutMs)*time.Millisecond, s.cfg.MaxContextTimeout)
	}
	// The caller's clock started when it sent the request, so time spent
	// queued here counts against its deadline.
	left := timeout - time.Since(received)
	if left <= 0 {
		return okReply{details: schemas.ContextDetails{TimedOut: true}, label: schemas.CodeTimeout}, nil
	}
	res, err := s.eng.Context(base, who, r.Prompt, memory.ContextOptions{Timeout: left, TokenBudget: r.TokenBudget, Exclude: r.Exclude})
	if err != nil {
		return okReply{}, err
	}
	d := schemas.ContextDetails{PrependContext: res.Block, Count: len(res.Memories), Skipped: res.Skipped, TimedOut: res.TimedOut}
	for _, c := range res.Memories {
		d.MemoryIDs = append(d.MemoryIDs, c.Memory.ID)
	}
	for _, m := range res.Core {
		d.CoreIDs = append(d.CoreIDs, m.ID)
	}
	ok := okReply{text: res.Block, details: d}
	if res.TimedOut {
		ok.label = schemas.CodeTimeout
	}
	return ok, nil
}

// listCursor is a page's next cursor: its last memory's timestamp and id.
func listCursor(v schemas.MemoryView) string { return strconv.FormatInt(v.Timestamp, 10) + ":" + v.ID }

// parseCursor reads a listCursor.
func parseCursor(c string) (*engine.ListKey, error) {
	if c == "" {
		return nil, nil
	}
	ts, id, ok := strings.Cut(c, ":")
	n, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil || n < 0 || !schemas.IsUUID(id) {
		return nil, fmt.Errorf("%w: cursor %q is not a list reply's nextCursor", schemas.ErrInvalid, textutil.OneLine(c, 80))
	}
	return &engine.ListKey{Timestamp: n, ID: id}, nil
}

// Bounds of list and stats requests.
const (
	maxListText  = 1024
	maxStatsDays = 366
)

func (s *Service) opList(req request) (okReply, error) {
	ctx, who, data := req.ctx, req.who, req.data
	var r listBody
	if err := decode(data, &r); err != nil {
		return okReply{}, err
	}
	cat, err := parseCategory(r.Category)
	if err != nil {
		return okReply{}, err
	}
	if r.Limit < 0 || r.Offset < 0 {
		return okReply{}, fmt.Errorf("%w: limit and offset must not be negative", schemas.ErrInvalid)
	}
	after, err := parseCursor(r.Cursor)
	if err != nil {
		return okReply{}, err
	}
	if !utf8.ValidString(r.Text) || len(r.Text) > maxListText || !utf8.ValidString(r.Session) || len(r.Session) > maxListText {
		return okReply{}, fmt.Errorf("%w: text and session must be valid UTF-8 of at most %d bytes", schemas.ErrInvalid, maxListText)
	}
	ms, err := s.eng.List(ctx, who, memory.ListOptions{Scope: r.Scope, Category: cat, Limit: r.Limit, Offset: r.Offset, History: r.IncludeSuperseded,
		Since: r.Since, Until: r.Until, Text: r.Text, Session: r.Session, After: after})
	if err != nil {
		return okReply{}, err
	}
	views := make([]schemas.MemoryView, len(ms))
	for i, m := range ms {
		views[i] = schemas.View(m)
	}
	d := schemas.ListDetails{Count: len(views), Offset: r.Offset, Memories: views}
	if limit := cmp.Or(r.Limit, engine.DefaultListLimit); len(views) > 0 && len(views) == min(limit, memory.MaxListLimit) {
		d.NextCursor = listCursor(views[len(views)-1])
	}
	if len(views) == 0 {
		return okReply{text: "No memories found.", details: d}, nil
	}
	lines := make([]rules.FramedMemory, len(views))
	for i, v := range views {
		lines[i] = rules.FramedMemory{Label: fmt.Sprintf("%d. [%s] %s", r.Offset+i+1, shortID(v.ID), label(v.Category, v.Scope)),
			Text: v.Text, Note: " (" + time.UnixMilli(v.Timestamp).UTC().Format(time.DateOnly) + life(v) + ")"}
	}
	text := fmt.Sprintf("Recent memories (%d, newest first):\n", len(views)) + rules.FrameMemories(lines, snippetRunes)
	return okReply{text: text, details: d}, nil
}

// rerankText says what the rerank stage runs in a user's terms. The
// cosine fallback is what a fresh install runs: the default rerank is a
// cross-encoder, which needs a key (or a self-hosted TEI) nobody has set,
// so it is the normal case, not a fault, and the setting that changes it
// is the one to name.
func rerankText(mode string) string {
	if mode == retrieve.RerankCosineFallback {
		return "cosine similarity (the default without a cross-encoder: set retrieval.rerankApiKey, or retrieval.rerankProvider tei, for one)"
	}
	return mode
}

func (s *Service) opStats(req request) (okReply, error) {
	ctx, who, data := req.ctx, req.who, req.data
	var r statsBody
	if err := decode(data, &r); err != nil {
		return okReply{}, err
	}
	if r.Days < 0 || r.Days > maxStatsDays {
		return okReply{}, fmt.Errorf("%w: days must be from 1 to %d", schemas.ErrInvalid, maxStatsDays)
	}
	st, err := s.eng.Stats(ctx, who, r.Scope)
	if err != nil {
		return okReply{}, err
	}
	if r.Days > 0 {
		today := time.Now().UTC().Truncate(24 * time.Hour)
		if st.ByDay, err = s.eng.AddedByDay(ctx, who, r.Scope, today.AddDate(0, 0, 1-r.Days).UnixMilli()); err != nil {
			return okReply{}, err
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Memory statistics:\nTotal: %s", st.Counted())
	writeCounts(&b, "By scope", st.ByScope)
	writeCounts(&b, "By category", st.ByCategory)
	fts := "off"
	if st.FullText {
		fts = "on"
	}
	fmt.Fprintf(&b, "\nRetrieval: %s (vector %.2g, BM25 %.2g), rerank %s, full-text search %s",
		st.Retrieval.Mode, st.Retrieval.VectorWeight, st.Retrieval.BM25Weight, rerankText(st.Rerank), fts)
	fmt.Fprintf(&b, "\nEmbedding: %s (%d dimensions)", st.Embedding, st.Dimensions)
	if !st.EmbedderOK {
		fmt.Fprintf(&b, ", unavailable: %s", st.EmbedderError)
	}
	d := statsDetails(st, s.deadLetters(ctx, who))
	if d.DeadLetters != nil && *d.DeadLetters > 0 {
		fmt.Fprintf(&b, "\nDead letters: %d of your events or transcript entries could not be processed (clawmem dlq list)", *d.DeadLetters)
	}
	return okReply{text: b.String(), details: d}, nil
}

func (s *Service) opShow(req request) (okReply, error) {
	ctx, who, data := req.ctx, req.who, req.data
	var r showBody
	if err := decode(data, &r); err != nil {
		return okReply{}, err
	}
	if r.MemoryID == "" {
		return okReply{}, fmt.Errorf("%w: give memoryId", schemas.ErrInvalid)
	}
	ch, err := s.eng.Chain(ctx, who, r.MemoryID)
	if err != nil {
		return okReply{}, err
	}
	views := func(ms []schemas.Memory) []schemas.MemoryView {
		out := make([]schemas.MemoryView, len(ms))
		for i, m := range ms {
			out[i] = schemas.View(m)
		}
		return out
	}
	d := schemas.ShowDetails{Memory: schemas.View(ch.Memory), Replaced: views(ch.Replaced), ReplacedBy: views(ch.ReplacedBy)}
	line := func(prefix string, v schemas.MemoryView) rules.FramedMemory {
		return rules.FramedMemory{Label: prefix + "[" + shortID(v.ID) + "] " + label(v.Category, v.Scope), Text: v.Text,
			Note: " (" + time.UnixMilli(v.Timestamp).UTC().Format(time.DateOnly) + life(v) + ")"}
	}
	lines := []rules.FramedMemory{line("", d.Memory)}
	for _, v := range d.ReplacedBy {
		lines = append(lines, line("replaced by ", v))
	}
	for _, v := range d.Replaced {
		lines = append(lines, line("replaced ", v))
	}
	return okReply{text: rules.FrameMemories(lines, 0), details: d}, nil
}
