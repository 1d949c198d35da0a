package jobs

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/robfig/cron/v3"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/workers/internal/schedule"
)

// Consolidation runs consolidation on a schedule (jobs.consolidate):
// near-duplicates merged, faded memories archived when a floor is set.
type Consolidation struct {
	eng      *memory.Engine
	schedule string
	opts     memory.ConsolidateOptions
	log      *slog.Logger
}

// NewConsolidation checks the schedule (a cron spec, or "off").
func NewConsolidation(eng *memory.Engine, schedule string, opts memory.ConsolidateOptions, log *slog.Logger) (*Consolidation, error) {
	if schedule == "" {
		schedule = "@daily"
	}
	if schedule != "off" {
		if _, err := cron.ParseStandard(schedule); err != nil {
			return nil, fmt.Errorf("jobs.consolidate.schedule %q: %w", schedule, err)
		}
	}
	return &Consolidation{eng: eng, schedule: schedule, opts: opts, log: log}, nil
}

// Run runs the schedule until ctx ends.
func (j *Consolidation) Run(ctx context.Context) error {
	if j.schedule == "off" {
		<-ctx.Done()
		return nil
	}
	cr := schedule.New(j.log)
	if _, err := cr.AddFunc(j.schedule, func() { j.once(ctx) }); err != nil {
		return err
	}
	cr.Start()
	defer func() { <-cr.Stop().Done() }()
	j.log.Info("consolidation scheduled", "schedule", j.schedule, "mergeMin", j.opts.MergeMin, "archiveFloor", j.opts.ArchiveFloor)
	<-ctx.Done()
	return nil
}

func (j *Consolidation) once(ctx context.Context) {
	rep, err := j.eng.Consolidate(ctx, j.opts)
	if err != nil {
		if ctx.Err() == nil {
			j.log.Error("consolidation failed; the next run finishes it", "err", err)
		}
		return
	}
	j.log.Info("consolidation done", "scanned", rep.Scanned, "merged", len(rep.Merges), "archived", len(rep.Archived))
}

// LLMJudge is consolidation's judge backed by a chat model: it asks
// whether look-alike memories state one fact (distill.JudgeRequest) and
// refuses answers that are not what was asked (distill.ParseJudgement).
func LLMJudge(llm distill.LLM) memory.MergeJudge {
	return func(ctx context.Context, texts []string) (bool, string, error) {
		resp, err := llm.Generate(ctx, distill.JudgeRequest(texts))
		if err != nil {
			return false, "", err
		}
		return distill.ParseJudgement(resp.Text)
	}
}
