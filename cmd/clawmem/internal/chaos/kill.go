package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/internal/natsauth"
)

// Env is where scenarios run: the clawmem binary and a scratch directory
// each scenario makes its data dir in.
type Env struct {
	Bin     string // default: this executable
	Scratch string
	Seed    uint64
}

// KillOptions size the kill loop.
type KillOptions struct {
	Events int
	Rate   float64 // events per second
	Kills  int
}

// KillLoop publishes Events at Rate while SIGKILLing `clawmem up` Kills
// times at random moments and restarting it, then checks every
// acknowledged event is stored exactly once.
func KillLoop(ctx context.Context, env Env, o KillOptions) (Result, error) {
	start := time.Now()
	r := Result{Scenario: "kill loop"}
	up, nc, err := env.start(ctx, "kill", nil)
	if err != nil {
		return r, err
	}
	defer up.Kill()
	defer nc.Close()
	load := NewLoad(up.Ingest(), o.Events, o.Rate, env.Seed)
	loadCtx, cancel := context.WithTimeout(ctx, time.Duration(float64(o.Events)/o.Rate*float64(time.Second))+5*time.Minute)
	defer cancel()
	loaded := make(chan struct{})
	go func() { load.Run(loadCtx); close(loaded) }()

	// Kill at random moments of the load's span, at least 2 s apart so
	// each restart gets to take some work.
	span := float64(o.Events) / o.Rate
	rng := rand.New(rand.NewPCG(env.Seed, 7))
	at := make([]float64, o.Kills)
	for i := range at {
		at[i] = span * (0.1 + 0.8*rng.Float64())
	}
	slices.Sort(at)
	var downs []float64
	kills := 0
	for _, t := range at {
		wait := time.Until(start.Add(time.Duration(t * float64(time.Second))))
		if kills > 0 {
			wait = max(wait, 2*time.Second)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(wait):
		}
		up.Kill()
		kills++
		down := time.Now()
		time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
		if err := up.Start(ctx); err != nil {
			return r, fmt.Errorf("restart after kill %d: %w", kills, err)
		}
		downs = append(downs, time.Since(down).Seconds())
	}
	<-loaded
	t, err := load.Settle(ctx, nc, 30*time.Second)
	if err != nil {
		r.fail("counting the store: %v", err)
	}
	r.checkNoDLQ(ctx, nc, t)
	if err := up.Stop(); err != nil {
		r.fail("graceful stop after the kills: %v", err)
	}
	var worst float64
	for _, d := range downs {
		worst = max(worst, d)
	}
	r.Figures = map[string]any{"kills": kills, "rate": o.Rate, "maxDownSec": worst, "answers": load.Codes()}
	r.Summary = fmt.Sprintf("kills %d (down ≤ %.1f s each), offered %.0f/s, ingest answers %v", kills, worst, o.Rate, load.Codes())
	r.Seconds = time.Since(start).Seconds()
	r.finish()
	if !r.Pass {
		up.SaveLogs()
	}
	return r, nil
}

// up makes a scenario's instance in a fresh directory under Scratch.
func (env Env) up(name string, cfg map[string]any) (*Up, error) {
	dir, err := mkdirTemp(env.Scratch, name)
	if err != nil {
		return nil, err
	}
	return NewUp(env.Bin, dir, cfg)
}

// start makes a scenario's instance, starts it and connects to its NATS
// (reconnecting for as long as it takes). The caller kills the instance
// and closes the connection.
func (env Env) start(ctx context.Context, name string, cfg map[string]any) (*Up, *nats.Conn, error) {
	up, err := env.up(name, cfg)
	if err != nil {
		return nil, nil, err
	}
	nc, err := connect(ctx, up)
	return up, nc, err
}

// connect starts up and connects to its NATS.
func connect(ctx context.Context, up *Up) (*nats.Conn, error) {
	if err := up.Start(ctx); err != nil {
		return nil, err
	}
	opts := []nats.Option{nats.Name("clawmem-chaos"), nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}
	// The embedded server admits clawmem's own user of the data dir; an
	// external server of the harness's asks for nothing.
	if seed := natsauth.AdminSeed(up.Dir); fileExists(seed) {
		opt, err := natsauth.ClientOption(seed)
		if err != nil {
			up.Kill()
			return nil, err
		}
		opts = append(opts, opt)
	}
	nc, err := nats.Connect(up.NATSURL(), opts...)
	if err != nil {
		up.Kill()
		return nil, err
	}
	return nc, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
