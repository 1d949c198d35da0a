// Package offline is the CLI's pipeline on the data dir of a clawmem that
// is not running: the same operations as over a running clawmem's NATS,
// on the data dir's NATS store served by an embedded server of this
// process. It is the CLI's because serving a data dir is: client, which
// every front end links, never starts a server.
package offline

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/internal/natsauth"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/workers/jobs"
)

// Pipeline works in process on the data dir of a clawmem that is not
// running. It takes the whole configuration, as client.OpenLocal does,
// and uses three things of it: DataDir, whose NATS store (<DataDir>/nats)
// it serves with an embedded server started on first use, on a free
// loopback port; the store at DBPath with the configured embedder's
// dimensions, opened by BackupNow alone (so the other operations never
// lock it); and jobs.backup, which says where BackupNow writes and how
// many it keeps. Nothing else may use the data dir meanwhile: the caller
// checks that no clawmem runs there. Close stops the server.
type Pipeline struct {
	*client.NATSPipeline
	cfg *config.Config
}

// NewPipeline works on cfg's data dir.
func NewPipeline(cfg *config.Config) *Pipeline {
	return &Pipeline{cfg: cfg, NATSPipeline: client.NewNATSPipelineWith(func() (*nats.Conn, func(), error) {
		return serve(cfg.DataDir)
	})}
}

// serve starts a server on dataDir's NATS store and connects to it as
// clawmem's own user; the func returned ends both.
func serve(dataDir string) (*nats.Conn, func(), error) {
	storeDir := filepath.Join(dataDir, "nats")
	// Starting a server on a missing dir would create an empty store
	// where clawmem never ran.
	if _, err := os.Stat(storeDir); err != nil {
		return nil, nil, fmt.Errorf("%w in %s (clawmem up never ran here)", client.ErrNoNATSData, dataDir)
	}
	// The data dir's JetStream state lives in clawmem's account (moved
	// there from a store of before credentials), behind its own users.
	if _, err := natsauth.MigrateStore(storeDir); err != nil {
		return nil, nil, err
	}
	srv, err := natsembed.Start(natsembed.Options{StoreDir: storeDir, Port: -1,
		Base: func() (*server.Options, error) { return natsauth.ServerOptions(dataDir) }})
	if err != nil {
		return nil, nil, err
	}
	auth, err := natsauth.ClientOption(natsauth.AdminSeed(dataDir))
	if err != nil {
		srv.Stop()
		return nil, nil, err
	}
	nc, err := srv.Connect(auth)
	if err != nil {
		srv.Stop()
		return nil, nil, err
	}
	return nc, func() { nc.Close(); srv.Stop() }, nil
}

// BackupNow writes a backup from the store directly, to the files only:
// no Object Store copy. A store another process holds fails with an
// error wrapping engine.ErrLocked.
func (p *Pipeline) BackupNow(ctx context.Context) (jobs.BackupResult, error) {
	emb, err := embed.New(p.cfg.EmbedConfig())
	if err != nil {
		return jobs.BackupResult{}, fmt.Errorf("embedding: %w", err)
	}
	st, err := storeopen.Store(ctx, p.cfg, emb.Dimensions())
	if err != nil {
		return jobs.BackupResult{}, err
	}
	defer st.Close()
	job, err := jobs.NewBackup(st, nil, storeopen.BackupConfig(p.cfg, ""), slog.New(slog.DiscardHandler))
	if err != nil {
		return jobs.BackupResult{}, err
	}
	return job.RunOnce(ctx)
}
