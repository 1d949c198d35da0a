package client

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/internal/instance"
)

// Target says which clawmem a front end talks to, as every clawmem
// command decides it: the store at DB directly when given; else a running
// clawmem over NATS when a server is named (NATSURL, else the config's
// nats.url) or a `clawmem up` runs on the data dir; else the data dir's
// store in process. The pipeline's operations go over NATS when Running,
// else to the data dir's NATS store, which the CLI serves itself.
type Target struct {
	Config *config.Config
	// DB is a store directory to open directly (the CLI's --db).
	DB string
	// NATSURL names the NATS server of a running clawmem (--nats-url).
	NATSURL string
	// Name is the NATS connection's name, as servers list it.
	Name string
}

// URL is the NATS server to talk to: NATSURL, else nats.url, else the
// local `clawmem up`'s (its run file, else the configured port). named
// reports whether a server was given explicitly.
func (t Target) URL() (url string, named bool) {
	if url = t.NATSURL; url == "" {
		url = t.Config.NATS.URL
	}
	if url != "" {
		return url, true
	}
	return instance.LocalNATS(t.Config), false
}

// AwaitStart waits up to wait for a `clawmem up` starting on the data dir
// to be up, so that t then talks to it instead of opening the store it is
// about to take; starting is called once if there is one to wait for. DB
// naming that store fails at once, saying so; another DB waits too (the
// pipeline's state is the instance's). A named server waits for nothing.
func (t Target) AwaitStart(ctx context.Context, wait time.Duration, starting func()) error {
	if _, named := t.URL(); named {
		return nil
	}
	pid := instance.StartingPID(t.Config.DataDir)
	if pid == 0 {
		return nil
	}
	if t.DB != "" && SameDir(t.DB, t.Config.DBPath) {
		return fmt.Errorf("clawmem (pid %d) is starting on %s and is about to open %s: leave out --db to talk to it once it is up",
			pid, t.Config.DataDir, t.DB)
	}
	return instance.AwaitStart(ctx, t.Config.DataDir, wait, starting)
}

// Running reports whether a clawmem answers over NATS: a server was
// named, or a `clawmem up` runs on the data dir. It ignores DB: the
// pipeline's streams are NATS's whatever store a command names.
func (t Target) Running() bool {
	_, named := t.URL()
	return named || instance.Running(t.Config.DataDir)
}

// Remote reports whether store operations go over NATS: not with DB, else
// when a clawmem runs.
func (t Target) Remote() bool { return t.DB == "" && t.Running() }

// Dial connects to URL() as Name.
func (t Target) Dial() (*nats.Conn, error) {
	url, _ := t.URL()
	return instance.Connect(url, t.Config, t.Name)
}

// Store is the configuration with DBPath pointing at DB, if given.
func (t Target) Store() *config.Config {
	if t.DB == "" {
		return t.Config
	}
	cfg := *t.Config
	cfg.DBPath = t.DB
	return &cfg
}

// Client is the tool and admin operations' client: over NATS when
// Remote, else in process on Store()'s store (engine.ErrLocked when a
// clawmem holds it; sqlitestore.ErrNoStore when DB holds no store).
func (t Target) Client(ctx context.Context) (Client, error) {
	if !t.Remote() {
		if t.DB != "" {
			// --db names a store to work on, never one to make.
			if err := requireStore(ctx, t.Store()); err != nil {
				return nil, err
			}
		}
		c, err := OpenLocal(ctx, t.Store())
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	nc, err := t.Dial()
	if err != nil {
		return nil, err
	}
	return NewNATS(nc), nil
}

// Bulk is the bulk operations' target, chosen as Client chooses;
// exportOnly opens a local store without its engine (see OpenLocalBulk).
func (t Target) Bulk(ctx context.Context, exportOnly bool) (Bulk, error) {
	if !t.Remote() {
		b, err := OpenLocalBulk(ctx, t.Store(), exportOnly)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	nc, err := t.Dial()
	if err != nil {
		return nil, err
	}
	return NewNATSBulk(nc), nil
}
