package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/schemas"
)

// HostileScenario runs the hostile corpus against a clawmem up of its own,
// seeded with one memory of agent main's and one of another agent's (the
// corpus names that one's id), and stops it cleanly afterwards.
func HostileScenario(ctx context.Context, env Env, corpusPath string) (Result, error) {
	start := time.Now()
	r := Result{Scenario: "hostile input"}
	corpus, err := LoadCorpus(corpusPath)
	if err != nil {
		return r, err
	}
	up, nc, err := env.start(ctx, "hostile", nil)
	if err != nil {
		return r, err
	}
	defer up.Kill()
	defer nc.Close()
	res, err := client.NewNATS(nc).Call(ctx, schemas.OpImport, "", schemas.ImportRequest{NoDedup: true, Memories: []schemas.Memory{
		{ID: "ffffffff-ffff-4fff-8fff-ffffffffffff", Text: "Other's private note: the build flag is --fast", Scope: "agent:other"},
		{ID: "11111111-1111-4111-8111-111111111111", Text: "Main's note: standups are at ten", Scope: "agent:main"},
	}})
	if err != nil || res.IsError {
		return r, fmt.Errorf("seeding: %v %+v", err, res.Content)
	}
	rep, err := Hostile(ctx, Target{IngestURL: up.IngestURL(), IngestToken: up.IngestToken, NC: nc, DataDir: up.Dir}, corpus)
	if err != nil {
		return r, err
	}
	for _, o := range rep.Outcomes {
		if !o.Refused {
			r.fail("not refused: %s (%s): %s", o.Name, o.Surface, o.Answer)
		}
	}
	if rep.After != rep.Before {
		r.fail("memories %d before, %d after", rep.Before, rep.After)
	}
	if !rep.Answering {
		r.fail("clawmem stopped answering")
	}
	if !up.Running() {
		r.fail("clawmem up exited:\n%s", up.LastLines(60))
	} else if err := up.Stop(); err != nil {
		r.fail("graceful stop: %v", err)
	}
	bySurface := map[string]int{}
	for _, o := range rep.Outcomes {
		bySurface[o.Surface]++
	}
	r.Figures = map[string]any{"tried": rep.Tried, "refused": rep.Refused, "bySurface": bySurface, "before": rep.Before, "after": rep.After}
	r.Summary = fmt.Sprintf("%d bad inputs tried %v, %d refused, memories %d before and %d after", rep.Tried, bySurface, rep.Refused, rep.Before, rep.After)
	r.Seconds = time.Since(start).Seconds()
	r.finish()
	if !r.Pass {
		up.SaveLogs()
	}
	return r, nil
}
