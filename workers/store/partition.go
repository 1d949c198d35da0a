package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/work"
)

// itemPartition is the partition whose writer writes it: its scope's (for
// an invalidation, the named memory's), or partition itself when that
// cannot be told here (an inaccessible scope, an unknown memory: the
// write refuses it with the reason).
func (w *Worker) itemPartition(ctx context.Context, partition int, agent string, it schemas.CaptureItem) int {
	who := memory.Agent(agent)
	if it.Invalidates != "" {
		_, scope, err := w.eng.Locate(ctx, who, it.Invalidates, "")
		if err != nil {
			return w.untold(partition, agent)
		}
		return schemas.ScopePartition(scope, w.partitions())
	}
	scope, err := w.eng.TargetScope(who, it.Scope)
	if err != nil {
		return w.untold(partition, agent)
	}
	return schemas.ScopePartition(scope, w.partitions())
}

// untold is the partition of an item whose own cannot be told: the stage's
// (where the write refuses it), or, moving legacy work (-1), the agent's.
func (w *Worker) untold(partition int, agent string) int {
	if partition >= 0 {
		return partition
	}
	return schemas.AgentPartition(agent, w.partitions())
}

// moveOthers publishes the items of b that another partition writes to
// that partition's work, and returns the rest. Work is published to its
// writer's partition where it is made (work.Route), so this moves only work
// from before partitions and work routed by a node whose scope rules
// disagree with this one's. The moved copies' Msg-Ids
// derive from m's stream position, so a redelivered m moves them once.
func (w *Worker) moveOthers(ctx context.Context, partition int, m jetstream.Msg, agent string, b schemas.WorkBatch) ([]schemas.CaptureItem, error) {
	var mine []schemas.CaptureItem
	others := map[int][]schemas.CaptureItem{}
	for _, it := range b.Items {
		if p := w.itemPartition(ctx, partition, agent, it); p == partition {
			mine = append(mine, it)
		} else {
			others[p] = append(others[p], it)
		}
	}
	if len(others) == 0 {
		return mine, nil
	}
	md, err := m.Metadata()
	if err != nil {
		return nil, err
	}
	prefix := schemas.WorkCandidates
	if strings.HasPrefix(m.Subject(), schemas.WorkLessons+".") {
		prefix = schemas.WorkLessons
	}
	for p, its := range others {
		if err := work.Publish(ctx, w.js, schemas.WorkPartitionSubject(prefix, agent, p), fmt.Sprintf("moved-%d-%d", md.Sequence.Stream, p), agent, b.Source, its); err != nil {
			return nil, fmt.Errorf("move work to partition %d: %w", p, err)
		}
		w.outcome.WithLabelValues("moved").Add(float64(len(its)))
	}
	return mine, nil
}
