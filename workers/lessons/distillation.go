package lessons

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/schemas"
)

// A Distillation's states, as `clawmem distill status` shows them.
const (
	StatusQueued  = "queued"
	StatusRunning = "running"
	StatusDone    = "done"
	StatusError   = "error"
)

// Distillation is the record of one distilled range of a session in the
// distill KV bucket, as `clawmem distill status` shows it: the distill
// worker writes one per range a session-end event distils (under
// DistillationKey), the transcript distiller one per session, its last
// run's.
type Distillation struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
	// Range names the distilled messages (see rangeID); "" on the
	// transcript distiller's records.
	Range     string        `json:"range,omitempty"`
	Trigger   string        `json:"trigger"` // the event kind, or "cursor"/"manual"
	Status    string        `json:"status"`
	Source    string        `json:"source,omitempty"` // inline, stream or file
	Stats     distill.Stats `json:"stats"`
	Distiller string        `json:"distiller,omitempty"`
	Model     string        `json:"model,omitempty"`
	Lessons   int           `json:"lessons"`
	Summary   bool          `json:"sessionSummary,omitempty"`
	Error     string        `json:"error,omitempty"`
	Attempts  int           `json:"attempts"`
	Warnings  []string      `json:"warnings,omitempty"`
	Updated   time.Time     `json:"updated"`
}

// DistillationKey is the distill bucket key of one distilled range of a
// session.
func DistillationKey(agent, session, rangeID string) string {
	return "job." + agent + "." + schemas.SubjectToken(session) + "." + rangeID
}

// putDistillation records a range's distillation for `distill status`;
// the session's mark, held by the writer, keeps two workers from writing
// one record.
func putDistillation(ctx context.Context, kv jetstream.KeyValue, rec *Distillation) error {
	rec.Updated = time.Now().UTC()
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = kv.Put(ctx, DistillationKey(rec.Agent, rec.Session, rec.Range), b)
	return err
}

// previousAttempts returns how often a range's distillation was tried
// before.
func previousAttempts(ctx context.Context, kv jetstream.KeyValue, agent, session, rangeID string) int {
	e, err := kv.Get(ctx, DistillationKey(agent, session, rangeID))
	if err != nil {
		return 0
	}
	var old Distillation
	if json.Unmarshal(e.Value(), &old) != nil {
		return 0
	}
	return old.Attempts
}

// Distillations lists the distillation records (agent "" = all), newest
// first.
func Distillations(ctx context.Context, js jetstream.JetStream, agent string) ([]Distillation, error) {
	kv, err := js.KeyValue(ctx, schemas.BucketDistill)
	if err != nil {
		return nil, fmt.Errorf("distill bucket: %w", err)
	}
	filters := []string{"job.>", "range.>"}
	if agent != "" {
		filters = []string{"job." + agent + ".>", "range." + agent + ".>"}
	}
	lister, err := kv.ListKeysFiltered(ctx, filters...)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []Distillation
	for key := range lister.Keys() {
		e, err := kv.Get(ctx, key)
		if err != nil {
			continue
		}
		var d Distillation
		if json.Unmarshal(e.Value(), &d) == nil {
			recs = append(recs, d)
		}
	}
	slices.SortFunc(recs, func(a, b Distillation) int { return b.Updated.Compare(a.Updated) })
	return recs, nil
}
