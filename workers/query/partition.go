package query

// Partitioned writers: every scope belongs to one partition
// (schemas.ScopePartition), and each partition has one writer at a time,
// answering on its own endpoints (schemas.WriterSubject). A write is sent
// to the writer of the scope it changes: a store to its target scope's, a
// forget or an update to the named (or the confidently matched) memory's,
// an import's memories each to their scope's; a bulk delete or a
// consolidation over every scope goes to every writer, each doing its own
// scopes. A writer's endpoints check it again and pass a write that is not
// theirs on, once.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/schemas"
)

// headerHop marks a write one writer passed to another: it is not passed
// on again (writers that disagree on the partitions would loop).
const headerHop = "Clawmem-Hop"

func (r *Replication) partitions() int {
	if r == nil {
		return 1
	}
	return max(r.Partitions, 1)
}

// ownsScope reports whether a partition writer's endpoints write scope.
func (r *Replication) ownsScope(scope string) bool {
	return schemas.ScopePartition(scope, r.partitions()) == r.Partition
}

// route decides which partition's writer performs who's write op, and
// returns the request to send it: a forget or an update then names the
// memory by its full id, so the writer acts on the memory routed for.
func (s *Service) route(ctx context.Context, who memory.Who, op string, data []byte) (int, []byte, error) {
	n := s.cfg.Replication.partitions()
	home := func() (int, error) {
		scope, err := s.eng.TargetScope(who, "")
		return schemas.ScopePartition(scope, n), err
	}
	switch op {
	case schemas.OpStore:
		var r storeBody
		if err := decode(data, &r); err != nil {
			return 0, nil, err
		}
		scope, err := s.eng.TargetScope(who, r.Scope)
		return schemas.ScopePartition(scope, n), data, err
	case schemas.OpForget:
		var r forgetBody
		if err := decode(data, &r); err != nil {
			return 0, nil, err
		}
		query := r.Query
		if strings.TrimSpace(r.MemoryID) != "" {
			query = ""
		}
		p, id, err := s.locate(ctx, who, strings.ToLower(strings.TrimSpace(r.MemoryID)), query, r.Scope, home)
		if err != nil || id == "" {
			return p, data, err
		}
		r.MemoryID, r.Query = id, ""
		out, err := json.Marshal(r)
		return p, out, err
	case schemas.OpUpdate:
		var r updateBody
		if err := decode(data, &r); err != nil {
			return 0, nil, err
		}
		id, query := strings.TrimSpace(r.MemoryID), ""
		if schemas.ValidateIDOrPrefix(strings.ToLower(id)) != nil {
			id, query = "", id
		}
		p, full, err := s.locate(ctx, who, strings.ToLower(id), query, r.Scope, home)
		if err != nil || full == "" {
			return p, data, err
		}
		r.MemoryID = full
		out, err := json.Marshal(r)
		return p, out, err
	}
	return 0, nil, fmt.Errorf("%w: %s is not a write", schemas.ErrInvalid, op)
}

// locate finds the memory a forget or update names (by id) or matches (by
// query) and says its partition and full id. A memory this copy does not
// have, or a query without a confident match, goes to who's own
// partition, whose writer answers as it would anyway.
func (s *Service) locate(ctx context.Context, who memory.Who, id, query, scope string, home func() (int, error)) (int, string, error) {
	n := s.cfg.Replication.partitions()
	switch {
	case id != "":
		if err := schemas.ValidateIDOrPrefix(id); err != nil {
			return 0, "", err
		}
		full, memScope, err := s.eng.Locate(ctx, who, id, scope)
		if errors.Is(err, engine.ErrNotFound) {
			p, herr := home()
			return p, "", herr
		}
		if err != nil {
			return 0, "", err
		}
		return schemas.ScopePartition(memScope, n), full, nil
	case strings.TrimSpace(query) != "":
		m, err := s.eng.Match(ctx, who, query, scope)
		if err != nil {
			return 0, "", err
		}
		if m != nil {
			return schemas.ScopePartition(m.Scope, n), m.ID, nil
		}
	}
	p, err := home()
	return p, "", err
}

// owns reports whether this service writes partition p: always, unless
// it is one partition's writer.
func (s *Service) owns(p int) bool {
	r := s.cfg.Replication
	return r == nil || !r.PartitionWriter || r.Partition == p
}

// ownedOnly narrows an admin filter to the scopes this writer owns.
func (s *Service) ownedOnly(ctx context.Context, scope string, f engine.ScopeFilter) (engine.ScopeFilter, error) {
	r := s.cfg.Replication
	if r == nil || !r.PartitionWriter {
		return f, nil
	}
	if scope != "" {
		if !r.ownsScope(scope) {
			return engine.ScopeFilter{}, fmt.Errorf("%w: scope %s is partition %d's, not this writer's (%d)",
				ErrMisrouted, scope, schemas.ScopePartition(scope, r.partitions()), r.Partition)
		}
		return f, nil
	}
	all, err := s.eng.StoredScopes(ctx)
	if err != nil {
		return engine.ScopeFilter{}, err
	}
	var mine []string
	for _, sc := range all {
		if r.ownsScope(sc) {
			mine = append(mine, sc)
		}
	}
	return engine.InScopes(mine...), nil
}

// ErrMisrouted is a write that reached a writer not of its partition.
var ErrMisrouted = errors.New("the write reached the writer of another partition")

// checkRoute, on one partition's writer, routes a write again: one that is
// this writer's goes on (with the memory named by its full id), another
// is passed to its writer once.
func (s *Service) checkRoute(ctx context.Context, ep *endpoint, who memory.Who, subject string, hop bool, data []byte) ([]byte, *schemas.ToolResult, string) {
	r := s.cfg.Replication
	if r == nil || !r.PartitionWriter || !writes(ep.op) {
		return data, nil, ""
	}
	switch ep.op {
	case schemas.OpDeleteBulk, schemas.OpConsolidate:
		return data, nil, "" // they narrow themselves to this writer's scopes
	case schemas.OpImport:
		var req schemas.ImportRequest
		if err := decode(data, &req); err != nil {
			return data, nil, "" // the operation refuses it
		}
		for i, m := range req.Memories {
			if p := s.importPartition(req.Scope, m); !s.owns(p) {
				res, code := s.failure(ep, subject, fmt.Errorf("%w: memory %d is partition %d's, not this writer's (%d)", ErrMisrouted, i+1, p, r.Partition))
				return nil, &res, code
			}
		}
		return data, nil, ""
	}
	p, out, err := s.route(ctx, who, ep.op, data)
	if err != nil {
		res, code := s.failure(ep, subject, err)
		return nil, &res, code
	}
	if s.owns(p) {
		return out, nil, ""
	}
	if hop {
		res, code := s.failure(ep, subject, fmt.Errorf("%w: partition %d (do every process's nats.partitions agree?)", ErrMisrouted, p))
		return nil, &res, code
	}
	res, code := s.request(ctx, ep, subject, schemas.WriterSubject(p, who.AgentID(), ep.op), out, true)
	return nil, &res, code
}

// importPartition is the partition an imported memory goes to.
func (s *Service) importPartition(scope string, m schemas.Memory) int {
	if scope == "" {
		scope = m.Scope
	}
	return schemas.ScopePartition(scope, s.cfg.Replication.partitions())
}

// forwardWrite sends who's write to its partition's writer.
func (s *Service) forwardWrite(ctx context.Context, ep *endpoint, who memory.Who, subject string, data []byte) (schemas.ToolResult, string) {
	switch ep.op {
	case schemas.OpStore, schemas.OpForget, schemas.OpUpdate:
		p, out, err := s.route(ctx, who, ep.op, data)
		if err != nil {
			return s.failure(ep, subject, err)
		}
		return s.request(ctx, ep, subject, schemas.WriterSubject(p, who.AgentID(), ep.op), out, false)
	case schemas.OpExport:
		// An export's cursor lives in the process that started it: every
		// page goes to one writer, partition 0's.
		return s.request(ctx, ep, subject, schemas.WriterSubject(0, "", ep.op), data, false)
	case schemas.OpImport:
		return s.forwardImport(ctx, ep, subject, data)
	case schemas.OpDeleteBulk:
		var r schemas.DeleteBulkRequest
		if err := decode(data, &r); err != nil {
			return s.failure(ep, subject, err)
		}
		return s.fanOut(ctx, ep, subject, r.Scope, data, func(parts []json.RawMessage) (okReply, error) {
			d := schemas.DeleteBulkDetails{DryRun: r.DryRun, Scope: r.Scope, Before: r.Before}
			for _, raw := range parts {
				var one schemas.DeleteBulkDetails
				if err := json.Unmarshal(raw, &one); err != nil {
					return okReply{}, err
				}
				d.Count += one.Count
				d.Purged += one.Purged
				if one.PurgeNote != "" {
					d.PurgeNote = strings.TrimPrefix(d.PurgeNote+"; "+one.PurgeNote, "; ")
				}
			}
			return deleteBulkReply(d), nil
		})
	case schemas.OpConsolidate:
		var r schemas.ConsolidateRequest
		if err := decode(data, &r); err != nil {
			return s.failure(ep, subject, err)
		}
		return s.fanOut(ctx, ep, subject, r.Scope, data, func(parts []json.RawMessage) (okReply, error) {
			rep := schemas.ConsolidateDetails{DryRun: r.DryRun, Merges: []schemas.ConsolidateMerge{}, Archived: []string{}}
			for _, raw := range parts {
				var one schemas.ConsolidateDetails
				if err := json.Unmarshal(raw, &one); err != nil {
					return okReply{}, err
				}
				rep.Scanned += one.Scanned
				rep.Merges = append(rep.Merges, one.Merges...)
				rep.Archived = append(rep.Archived, one.Archived...)
			}
			return consolidateReply(rep), nil
		})
	}
	return s.failure(ep, subject, fmt.Errorf("%w: %s is not a write", schemas.ErrInvalid, ep.op))
}

// forwardImport sends each memory of an import to its partition's writer
// and adds their answers up, results numbered as in the request.
func (s *Service) forwardImport(ctx context.Context, ep *endpoint, subject string, data []byte) (schemas.ToolResult, string) {
	var r schemas.ImportRequest
	if err := decode(data, &r); err != nil {
		return s.failure(ep, subject, err)
	}
	if len(r.Memories) > schemas.MaxImportBatch {
		return s.failure(ep, subject, fmt.Errorf("%w: %d memories in one request (max %d)", schemas.ErrInvalid, len(r.Memories), schemas.MaxImportBatch))
	}
	groups := map[int][]int{} // partition → indexes into r.Memories
	for i, m := range r.Memories {
		p := s.importPartition(r.Scope, m)
		groups[p] = append(groups[p], i)
	}
	var calls []call
	for p, idx := range groups {
		part := r
		part.Memories = make([]schemas.Memory, len(idx))
		for k, i := range idx {
			part.Memories[k] = r.Memories[i]
		}
		body, err := json.Marshal(part)
		if err != nil {
			return s.failure(ep, subject, err)
		}
		calls = append(calls, call{subject: schemas.WriterSubject(p, "", ep.op), data: body, lines: idx})
	}
	return s.gather(ctx, ep, subject, calls, func(parts []json.RawMessage) (okReply, error) {
		d := schemas.ImportDetails{DryRun: r.DryRun, Results: []schemas.ImportResult{}}
		for k, raw := range parts {
			var one schemas.ImportDetails
			if err := json.Unmarshal(raw, &one); err != nil {
				return okReply{}, err
			}
			d.Imported += one.Imported
			d.Skipped += one.Skipped
			d.Failed += one.Failed
			d.Exists += one.Exists
			d.Duplicates += one.Duplicates
			for _, res := range one.Results {
				if res.Line >= 1 && res.Line <= len(calls[k].lines) {
					res.Line = calls[k].lines[res.Line-1] + 1
				}
				d.Results = append(d.Results, res)
			}
		}
		return importReply(d, len(r.Memories)), nil
	})
}

// fanOut sends an admin write over scope (every scope: to every partition's
// writer) and merges the answers.
func (s *Service) fanOut(ctx context.Context, ep *endpoint, subject, scope string, data []byte, merge func([]json.RawMessage) (okReply, error)) (schemas.ToolResult, string) {
	n := s.cfg.Replication.partitions()
	var calls []call
	if scope != "" {
		calls = append(calls, call{subject: schemas.WriterSubject(schemas.ScopePartition(scope, n), "", ep.op), data: data})
	} else {
		for p := range n {
			calls = append(calls, call{subject: schemas.WriterSubject(p, "", ep.op), data: data})
		}
	}
	return s.gather(ctx, ep, subject, calls, merge)
}

type call struct {
	subject string
	data    []byte
	lines   []int // import: the request's indexes of the memories sent
}

// gather makes the calls at once; the first failure is the answer, else
// merge makes one of their details.
func (s *Service) gather(ctx context.Context, ep *endpoint, subject string, calls []call, merge func([]json.RawMessage) (okReply, error)) (schemas.ToolResult, string) {
	results := make([]schemas.ToolResult, len(calls))
	codes := make([]string, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { results[i], codes[i] = s.request(ctx, ep, subject, c.subject, c.data, false) })
	}
	wg.Wait()
	parts := make([]json.RawMessage, len(calls))
	var seq uint64 // the latest write's: the caller reads it back after it
	for i, res := range results {
		if codes[i] != "" {
			return res, codes[i]
		}
		raw, err := json.Marshal(res.Details)
		if err != nil {
			return s.failure(ep, subject, err)
		}
		parts[i] = raw
		var d struct {
			LogSeq uint64 `json:"logSeq"`
		}
		if json.Unmarshal(raw, &d) == nil {
			seq = max(seq, d.LogSeq)
		}
	}
	ok, err := merge(parts)
	if err != nil {
		return s.failure(ep, subject, fmt.Errorf("the writers' replies to %s: %w", ep.op, err))
	}
	if seq > 0 {
		ok.details = withSeq{ok.details, seq}
	}
	return ok.result(), ok.label
}

// request sends a write to a writer's endpoint and answers with its reply.
func (s *Service) request(ctx context.Context, ep *endpoint, subject, target string, data []byte, hop bool) (schemas.ToolResult, string) {
	msg := nats.NewMsg(target)
	msg.Data = data
	if hop {
		msg.Header.Set(headerHop, "1")
	}
	reply, err := s.nc.RequestMsgWithContext(ctx, msg)
	if errors.Is(err, nats.ErrNoResponders) {
		return schemas.Failure(schemas.CodeUnavailable, "no memory writer answers for this partition right now (a failover takes up to a few seconds); retry", nil), schemas.CodeUnavailable
	}
	if err != nil {
		return s.failure(ep, subject, fmt.Errorf("forward %s to the writer: %w", ep.op, err))
	}
	var res schemas.ToolResult
	if err := json.Unmarshal(reply.Data, &res); err != nil {
		return s.failure(ep, subject, fmt.Errorf("the writer's reply to %s: %w", ep.op, err))
	}
	if res.IsError {
		var d schemas.ErrorDetails
		if raw, err := json.Marshal(res.Details); err == nil && json.Unmarshal(raw, &d) == nil && d.Code != "" {
			return res, d.Code
		}
		return res, schemas.CodeInternal
	}
	return res, ""
}
