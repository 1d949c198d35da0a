package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// group runs the parts of a node (or of its writer) together: the first
// part that fails cancels the others, and Wait returns the failures.
type group struct {
	ctx    context.Context
	cancel context.CancelFunc
	log    *slog.Logger
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

func newGroup(ctx context.Context, log *slog.Logger) *group {
	g := &group{log: log}
	g.ctx, g.cancel = context.WithCancel(ctx)
	return g
}

// start runs part name. An error after the group ended (a shutdown, or
// another part's failure, already recorded) is that end's echo and is
// dropped.
func (g *group) start(name string, run func(context.Context) error) {
	g.wg.Go(func() {
		if err := run(g.ctx); err != nil && g.ctx.Err() == nil {
			g.log.Error("role failed", "role", name, "err", err)
			g.mu.Lock()
			g.errs = append(g.errs, fmt.Errorf("%s: %w", name, err))
			g.mu.Unlock()
			g.cancel()
		}
	})
}

// halt stops every part and waits for them, dropping their errors: the
// group is being given up.
func (g *group) halt() {
	g.cancel()
	g.wg.Wait()
}

// wait waits for every part and returns their failures.
func (g *group) wait() error {
	g.wg.Wait()
	g.cancel()
	return errors.Join(g.errs...)
}
