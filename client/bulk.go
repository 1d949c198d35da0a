package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/schemas"
)

// ImportOptions are what an import asks of the store: a scope for every
// row, a dry run, no near-duplicate check.
type ImportOptions struct {
	Scope   string
	DryRun  bool
	NoDedup bool
}

// Bulk is a store the bulk commands (export, import, re-embed, migrate)
// read and write: one this process opened (LocalBulk), or a running
// clawmem through its admin endpoints (NATSBulk).
type Bulk interface {
	// Export calls fn with every memory in scope ("" for all).
	Export(ctx context.Context, scope string, vectors bool, fn func(schemas.Memory) error) error
	// Count is how many memories export would visit.
	Count(ctx context.Context, scope string) (int, error)
	// CheckImport refuses options the store would refuse for every row.
	CheckImport(ctx context.Context, o ImportOptions) error
	// ImportBatch imports rows and returns each one's outcome, in order.
	ImportBatch(ctx context.Context, recs []portable.Record, o ImportOptions) ([]portable.Result, error)
	// Has reports whether a memory with exactly this id exists.
	Has(ctx context.Context, id string) (bool, error)
	// Where names the store for messages.
	Where() string
	Close() error
}

// LocalBulk is a store this process opened.
type LocalBulk struct {
	Dir    string
	Store  engine.Store
	Engine *memory.Engine // nil when opened for export only
}

func (t *LocalBulk) Where() string { return "the store at " + t.Dir }

func (t *LocalBulk) Has(ctx context.Context, id string) (bool, error) { return t.Store.Has(ctx, id) }
func (t *LocalBulk) Close() error                                     { return t.Store.Close() }

func (t *LocalBulk) Export(ctx context.Context, scope string, vectors bool, fn func(schemas.Memory) error) error {
	f, err := engine.ScopeOrAll(scope)
	if err != nil {
		return err
	}
	return t.Store.Iterate(ctx, engine.IterateOptions{Scopes: f, WithVectors: vectors}, fn)
}

func (t *LocalBulk) Count(ctx context.Context, scope string) (int, error) {
	f, err := engine.ScopeOrAll(scope)
	if err != nil {
		return 0, err
	}
	st, err := t.Store.Stats(ctx, f)
	return st.Total + st.History, err // export visits history too
}

// checkImport: a --scope the config does not define fails the import, not
// each row (as the admin endpoint refuses it).
func (t *LocalBulk) CheckImport(_ context.Context, o ImportOptions) error {
	if o.Scope == "" {
		return nil
	}
	return t.Engine.Scopes().Validate(o.Scope)
}

func (t *LocalBulk) ImportBatch(ctx context.Context, recs []portable.Record, o ImportOptions) ([]portable.Result, error) {
	po := portable.ImportOptions{Scope: o.Scope, DryRun: o.DryRun, Dedup: portable.DefaultDedup, ValidateScope: t.Engine.Scopes().Validate,
		Secrets: t.Engine.Secrets()}
	if o.NoDedup {
		po.Dedup = 0
	}
	return portable.NewImporter(t.Store, t.Engine.Embedder(), po).Import(ctx, recs)
}

// NATSBulk is a running clawmem, reached through its admin endpoints.
type NATSBulk struct{ nc *nats.Conn }

// NewNATSBulk uses nc; Close closes it.
func NewNATSBulk(nc *nats.Conn) *NATSBulk { return &NATSBulk{nc: nc} }

func (t *NATSBulk) Where() string { return "the clawmem at " + t.nc.ConnectedUrl() }
func (t *NATSBulk) Close() error  { t.nc.Close(); return nil }

// bulkTimeout bounds one export page or import batch over NATS; the
// service's own limit (30 s) is what usually applies.
const bulkTimeout = 2 * time.Minute

// request sends an admin request and decodes the reply's details into d.
func (t *NATSBulk) request(ctx context.Context, op string, req, d any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, bulkTimeout)
	defer cancel()
	msg, err := t.nc.RequestWithContext(ctx, schemas.AdminSubject(op), body)
	if errors.Is(err, nats.ErrNoResponders) {
		return fmt.Errorf("no clawmem answers %s on NATS (%s): is `clawmem up` running, and is it this version (with the admin %s endpoint)?",
			schemas.AdminSubject(op), t.nc.ConnectedUrl(), op)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	var res struct {
		Content []schemas.TextContent `json:"content"`
		Details json.RawMessage       `json:"details"`
		IsError bool                  `json:"isError"`
	}
	if err := json.Unmarshal(msg.Data, &res); err != nil {
		return fmt.Errorf("bad reply from the query service: %w", err)
	}
	if res.IsError {
		var e schemas.ErrorDetails
		_ = json.Unmarshal(res.Details, &e)
		return &ServiceError{op: op, ErrorDetails: e}
	}
	return json.Unmarshal(res.Details, d)
}

// ServiceError is an error reply of the query service to a bulk request.
type ServiceError struct {
	op string
	schemas.ErrorDetails
}

func (e *ServiceError) Error() string { return e.op + ": " + e.ErrorDetails.Error }

// Has asks show for the id as admin: not found means no such memory.
func (t *NATSBulk) Has(ctx context.Context, id string) (bool, error) {
	var d schemas.ShowDetails
	err := t.request(ctx, schemas.OpShow, schemas.ShowRequest{MemoryID: id}, &d)
	if se, ok := errors.AsType[*ServiceError](err); ok && se.Code == schemas.CodeNotFound {
		return false, nil
	}
	return err == nil && d.Memory.ID == id, err
}

func (t *NATSBulk) Export(ctx context.Context, scope string, vectors bool, fn func(schemas.Memory) error) error {
	req := schemas.ExportRequest{Scope: scope, WithVectors: vectors, Limit: schemas.ExportMaxLimit}
	for {
		var d schemas.ExportDetails
		if err := t.request(ctx, schemas.OpExport, req, &d); err != nil {
			return err
		}
		for _, raw := range d.Memories {
			var m schemas.Memory
			if err := json.Unmarshal(raw, &m); err != nil {
				return fmt.Errorf("export page %d: %w", d.Page, err)
			}
			if err := fn(m); err != nil {
				return err
			}
		}
		if d.NextCursor == "" {
			return nil
		}
		req = schemas.ExportRequest{Cursor: d.NextCursor, Limit: req.Limit}
	}
}

func (t *NATSBulk) Count(ctx context.Context, scope string) (int, error) {
	var st schemas.StatsDetails
	err := t.request(ctx, schemas.OpStats, schemas.StatsRequest{Scope: scope}, &st)
	return st.Total + st.History, err // export visits history too
}

// checkImport sends an empty batch, which the service checks like any.
func (t *NATSBulk) CheckImport(ctx context.Context, o ImportOptions) error {
	var d schemas.ImportDetails
	return t.request(ctx, schemas.OpImport, schemas.ImportRequest{Memories: []schemas.Memory{}, Scope: o.Scope, DryRun: true}, &d)
}

// importBatch sends the rows that read well in requests that fit the NATS
// payload limit; rows that did not read well fail here.
func (t *NATSBulk) ImportBatch(ctx context.Context, recs []portable.Record, o ImportOptions) ([]portable.Result, error) {
	out := make([]portable.Result, len(recs))
	limit := min(t.nc.MaxPayload(), schemas.MaxRequestBytes) - 4<<10
	var (
		sent []int
		req  = schemas.ImportRequest{Scope: o.Scope, DryRun: o.DryRun, NoDedup: o.NoDedup}
		size int64
	)
	flush := func() error {
		if len(sent) == 0 {
			return nil
		}
		var d schemas.ImportDetails
		if err := t.request(ctx, schemas.OpImport, req, &d); err != nil {
			return err
		}
		for _, i := range sent {
			out[i] = portable.Result{Line: recs[i].Line, ID: recs[i].Memory.ID, Status: portable.Imported}
		}
		for _, r := range d.Results {
			if r.Line < 1 || r.Line > len(sent) {
				return fmt.Errorf("import: the reply names row %d of %d", r.Line, len(sent))
			}
			i := sent[r.Line-1]
			out[i] = portable.Result{Line: recs[i].Line, ID: r.ID, Status: portable.Status(r.Status), Reason: r.Reason,
				DuplicateOf: r.DuplicateOf, Similarity: r.Similarity}
		}
		sent, req.Memories, size = sent[:0], req.Memories[:0], 0
		return nil
	}
	for i, rec := range recs {
		if rec.Err != nil {
			out[i] = portable.Result{Line: rec.Line, Status: portable.Failed, Reason: portable.Reason(rec.Err)}
			continue
		}
		b, err := json.Marshal(rec.Memory)
		if err != nil {
			return nil, err
		}
		if n := int64(len(b)) + 1; len(sent) > 0 && (size+n > limit || len(sent) >= schemas.MaxImportBatch) {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		size += int64(len(b)) + 1
		sent = append(sent, i)
		req.Memories = append(req.Memories, rec.Memory)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}
