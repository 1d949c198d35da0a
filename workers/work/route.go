// Package work is how the producers of memory candidates — capture and
// distillation — hand them to the store worker: the one routing of an
// item to its writer's partition (Route) and the one way a batch of work
// is published (Publish), which the store worker also uses to move work
// that reached the wrong partition.
package work

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/schemas"
)

// Route sends candidates straight to their writer. The scope an item
// changes is resolved once, where the candidate is made, and
// schemas.ScopePartition — the one routing function of every write path,
// the query service's tool writes and the memory log included — names the
// partition whose writer writes it. The store stage checks the same
// function again and moves what is not its own (work published before
// partitions, or by a node whose scope configuration disagrees); on the
// normal path nothing is moved.
type Route struct {
	partitions int
	scopes     *scopes.Manager
}

// NewRoute routes over partitions partitions with scope rules sm (nil:
// the built-in rules, with no scopes defined).
func NewRoute(partitions int, sm *scopes.Manager) Route {
	if sm == nil {
		sm, _ = scopes.New(scopes.Config{}) // the empty configuration is always valid
	}
	return Route{partitions: max(partitions, 1), scopes: sm}
}

// scope is the scope item of agent changes: an invalidation's target's
// (smart extraction names it), else the scope the write resolves to. An
// item whose scope cannot be resolved goes to the agent's default scope's
// writer, which refuses it with the reason.
func (r Route) scope(agent string, it schemas.CaptureItem) string {
	if it.Invalidates != "" && it.Scope != "" {
		return it.Scope
	}
	if it.Invalidates == "" {
		if s, err := r.scopes.Resolve(agent, it.Scope); err == nil {
			return s
		}
	}
	return r.scopes.Default(agent)
}

// partition is the partition whose writer writes item of agent.
func (r Route) partition(agent string, it schemas.CaptureItem) int {
	return schemas.ScopePartition(r.scope(agent, it), r.partitions)
}

// Publish hands items of agent to their writers: one WorkBatch per
// partition on prefix (schemas.WorkCandidates or schemas.WorkLessons),
// with msgID and the partition as its Msg-Id, so a repeated publish is a
// no-op per partition.
func (r Route) Publish(ctx context.Context, js jetstream.JetStream, prefix, agent, source, msgID string, items []schemas.CaptureItem) error {
	byPartition := map[int][]schemas.CaptureItem{}
	for _, it := range items {
		p := r.partition(agent, it)
		byPartition[p] = append(byPartition[p], it)
	}
	for _, p := range slices.Sorted(maps.Keys(byPartition)) {
		id := msgID + "-p" + strconv.Itoa(p)
		if err := Publish(ctx, js, schemas.WorkPartitionSubject(prefix, agent, p), id, agent, source, byPartition[p]); err != nil {
			return fmt.Errorf("partition %d: %w", p, err)
		}
	}
	return nil
}
