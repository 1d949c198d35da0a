package query

// Writing operations: store, forget, update.

import (
	"fmt"
	"strings"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/schemas"
)

func (s *Service) opStore(req request) (okReply, error) {
	ctx, who, data := req.ctx, req.who, req.data
	var r storeBody
	if err := decode(data, &r); err != nil {
		return okReply{}, err
	}
	cat, err := parseCategory(r.Category)
	if err != nil {
		return okReply{}, err
	}
	if err := checkImportance(r.Importance); err != nil {
		return okReply{}, err
	}
	if err := schemas.ValidateMetadata(r.Metadata); err != nil {
		return okReply{}, err
	}
	res, err := s.eng.Store(ctx, who, memory.StoreRequest{Text: r.Text, Category: cat, Scope: r.Scope,
		Importance: r.Importance, Metadata: r.Metadata, Supersedes: r.Supersedes}, memory.DedupTool)
	if err != nil {
		return okReply{}, err
	}
	m := res.Memory
	d := schemas.StoreDetails{Action: string(res.Status), ID: m.ID, Scope: m.Scope, Category: m.Category}
	if res.Status == memory.Duplicate {
		d.ExistingID, d.Similarity = m.ID, res.Score
		return okReply{text: fmt.Sprintf("Similar memory already exists (%.0f%% similar), not stored again:\n", res.Score*100) +
			rules.FrameMemories([]rules.FramedMemory{{Label: "[" + shortID(m.ID) + "] " + label(m.Category, m.Scope), Text: m.Text}}, snippetRunes),
			details: d}, nil
	}
	d.Superseded = res.Superseded
	text := fmt.Sprintf("Stored memory %s [%s:%s]: %q", shortID(m.ID), m.Category, m.Scope, snippet(m.Text))
	for _, id := range res.Superseded {
		text += fmt.Sprintf("\nIt supersedes %s (kept as history).", shortID(id))
	}
	return okReply{text: text, details: d}, nil
}

func (s *Service) opForget(req request) (okReply, error) {
	ctx, who, data := req.ctx, req.who, req.data
	var r forgetBody
	if err := decode(data, &r); err != nil {
		return okReply{}, err
	}
	id := strings.ToLower(strings.TrimSpace(r.MemoryID))
	if id != "" {
		if err := schemas.ValidateIDOrPrefix(id); err != nil {
			return okReply{}, err
		}
	}
	res, err := s.eng.Forget(ctx, who, memory.ForgetRequest{ID: id, Query: r.Query, Scope: r.Scope})
	if err != nil {
		return okReply{}, err
	}
	if res.Deleted != "" {
		e := s.erase(ctx, []schemas.Memory{res.Memory})
		return okReply{text: fmt.Sprintf("Memory %s forgotten.", shortID(res.Deleted)) + e.text(),
			details: schemas.ForgetDetails{Action: "deleted", ID: res.Deleted, Purged: e.purged, PurgeNote: e.note}}, nil
	}
	views := memoryViews(res.Candidates)
	return okReply{text: candidatesText(views), details: schemas.ForgetDetails{Action: "candidates", Candidates: views}}, nil
}

func candidatesText(views []schemas.MemoryView) string {
	if len(views) == 0 {
		return "No matching memories found."
	}
	lines := make([]rules.FramedMemory, len(views))
	for i, v := range views {
		lines[i] = rules.FramedMemory{Label: "- [" + shortID(v.ID) + "]", Text: v.Text, Note: fmt.Sprintf(" (%.0f%%)", v.Score*100)}
	}
	return fmt.Sprintf("Found %d %s; specify memoryId:\n", len(views), plural(len(views), "candidate", "candidates")) +
		rules.FrameMemories(lines, snippetRunes)
}

func (s *Service) opUpdate(req request) (okReply, error) {
	ctx, who, data := req.ctx, req.who, req.data
	var r updateBody
	if err := decode(data, &r); err != nil {
		return okReply{}, err
	}
	var cat *schemas.Category
	if r.Category != nil {
		c, err := schemas.ParseCategory(*r.Category)
		if err != nil {
			return okReply{}, err
		}
		cat = &c
	}
	if err := checkImportance(r.Importance); err != nil {
		return okReply{}, err
	}
	res, err := s.eng.Update(ctx, who, memory.UpdateRequest{ID: r.MemoryID, Text: r.Text, Category: cat,
		Importance: r.Importance, Scope: r.Scope})
	if err != nil {
		return okReply{}, err
	}
	if res.Memory != nil {
		v := schemas.View(*res.Memory)
		return okReply{text: fmt.Sprintf("Memory %s updated.", shortID(v.ID)),
			details: schemas.UpdateDetails{Action: "updated", ID: v.ID, Memory: &v}}, nil
	}
	views := memoryViews(res.Candidates)
	return okReply{text: candidatesText(views), details: schemas.UpdateDetails{Action: "candidates", Candidates: views}}, nil
}
