package query

// Replication: a query service as one of several over the memory log
// (workers/memlog). The writer's service answers writes once their change
// is in the log, with its sequence; a replica's service forwards writes to
// the writer's endpoints and answers reads from its own copy, after the
// sequence a caller asks for.

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/clawmem/clawmem/schemas"
)

// Replication makes a service part of a replicated deployment.
type Replication struct {
	// Flush, on the writer, publishes the changes made so far to the
	// memory log and returns the sequence that holds them; a write's reply
	// carries it as logSeq.
	Flush func(ctx context.Context) (uint64, error)
	// Forward, on a replica, sends writes (and exports, whose cursors live
	// in one process) to the writer's endpoints.
	Forward bool
	// WaitFor, on a replica, waits until the log is applied up to seq.
	WaitFor func(ctx context.Context, seq uint64, timeout time.Duration) error
	// StaleWait bounds that wait; default 2 s.
	StaleWait time.Duration
	// Position, when set, is how far this copy has the log, reported in
	// $SRV.STATS (and so by `clawmem status`) with Role.
	Position func() uint64
	Role     string
	// Partitions is how many partitions writers share (nats.partitions).
	Partitions int
	// PartitionWriter marks one partition's writer endpoints, those of
	// Partition: a write of another partition's scope is passed on to its
	// writer, an admin write narrowed to this partition's scopes.
	PartitionWriter bool
	Partition       int
}

// forwarded reports whether a replica sends op to the writer.
func forwarded(op string) bool {
	switch op {
	case schemas.OpStore, schemas.OpForget, schemas.OpUpdate, schemas.OpImport, schemas.OpDeleteBulk,
		schemas.OpConsolidate, schemas.OpExport:
		return true
	}
	return false
}

// writes reports whether op changes memories.
func writes(op string) bool { return forwarded(op) && op != schemas.OpExport }

// awaitSeq waits, on a replica, for the sequence the request asks for.
func (s *Service) awaitSeq(ctx context.Context, data []byte) error {
	r := s.cfg.Replication
	if r == nil || r.WaitFor == nil {
		return nil
	}
	var p struct {
		AfterSeq uint64 `json:"afterSeq"`
	}
	if json.Unmarshal(data, &p) != nil || p.AfterSeq == 0 {
		return nil // a malformed body is the operation's to refuse
	}
	wait := r.StaleWait
	if wait <= 0 {
		wait = 2 * time.Second
	}
	return r.WaitFor(ctx, p.AfterSeq, wait)
}

// withSeq adds logSeq to a write's details, whatever their type.
type withSeq struct {
	details any
	seq     uint64
}

func (w withSeq) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(w.details)
	if err != nil {
		return nil, err
	}
	seq := `"logSeq":` + strconv.FormatUint(w.seq, 10)
	// Details that are not an object, or an empty one, become just it.
	if b = bytes.TrimSpace(b); len(b) < 2 || b[0] != '{' || bytes.Equal(b, []byte("{}")) {
		return []byte(`{` + seq + `}`), nil
	}
	return append([]byte(`{`+seq+`,`), b[1:]...), nil
}
