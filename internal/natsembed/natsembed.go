// Package natsembed runs a NATS server with JetStream inside the process:
// what `clawmem up` uses when no external server is configured, and what
// every test uses instead of a mock.
package natsembed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// DefaultPort is clawmem's embedded NATS port: not 4222, so it never
// collides with a system NATS server.
const DefaultPort = 4244

// Options configure an embedded server.
type Options struct {
	// StoreDir holds JetStream's files.
	StoreDir string
	// Host defaults to 127.0.0.1: the server is for this machine only.
	Host string
	// Port: 0 means DefaultPort; -1 picks a random free port.
	Port int
	// Logger receives the server's log; nil silences it.
	Logger *slog.Logger
	// MaxPayload raises NATS's 1 MB message limit (hook events carry whole
	// conversations). 0 means 8 MB.
	MaxPayload int32
	// Sync is when JetStream flushes its files to disk (see ParseSync):
	// zero is the server's default interval (an acknowledged message can be
	// lost on power loss, not on a process crash).
	Sync Sync
	// MaxStore caps JetStream's file storage in bytes (0: the server's
	// default, 75% of the disk's free space at start).
	MaxStore int64
	// Base, when set, gives the options to start from: the accounts and
	// users (natsauth). It is called again at every restart and Reload, so
	// users added since are in.
	Base func() (*server.Options, error)
}

// Sync is JetStream's flush policy: Always flushes every write before it
// is acknowledged; otherwise every Interval (0: the server's default, 2
// minutes).
type Sync struct {
	Always   bool
	Interval time.Duration
}

// Server is a running embedded NATS server.
type Server struct {
	*server.Server
	mu   sync.Mutex // held while the server is swapped or stopped
	o    Options
	opts *server.Options
	log  *slog.Logger
	// writeFailed is set when JetStream reports a failed write to its
	// files (a full disk): its file store refuses every later write until
	// the server starts again.
	writeFailed atomic.Bool
}

// Start starts a server and waits until it accepts connections.
func Start(o Options) (*Server, error) {
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.MaxPayload == 0 {
		o.MaxPayload = 8 << 20
	}
	// A taken port would show only as a wait for readiness that times out
	// and a guess at why; trying it first names the cause.
	if o.Port > 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)))
		if err != nil {
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
		ln.Close()
	}
	srv := &Server{o: o, log: o.Logger}
	opts, err := srv.options()
	if err != nil {
		return nil, err
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	srv.opts = opts
	if err := srv.run(s); err != nil {
		return nil, err
	}
	// A restart (Guard) must come back on the same port.
	if addr, ok := s.Addr().(*net.TCPAddr); ok {
		srv.o.Port = addr.Port
		opts.Port = addr.Port
	}
	return srv, nil
}

// options builds the server's options: Base's, with clawmem's settings.
func (srv *Server) options() (*server.Options, error) {
	o := srv.o
	opts := &server.Options{}
	if o.Base != nil {
		var err error
		if opts, err = o.Base(); err != nil {
			return nil, err
		}
	}
	opts.ServerName = "clawmem"
	opts.Host, opts.Port = o.Host, o.Port
	opts.JetStream, opts.StoreDir = true, o.StoreDir
	opts.MaxPayload = o.MaxPayload
	opts.NoSigs = true
	// SyncAlways flushes each write; the interval still bounds what a
	// write that bypasses it could leave unflushed.
	opts.SyncAlways, opts.SyncInterval = o.Sync.Always, o.Sync.Interval
	opts.JetStreamMaxStore = o.MaxStore
	return opts, nil
}

// run starts s as the server's current one.
func (srv *Server) run(s *server.Server) error {
	log := srv.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s.SetLoggerV2(&slogAdapter{l: log.With("component", "nats"), failed: &srv.writeFailed}, false, false, false)
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return fmt.Errorf("embedded nats did not start on %s:%d (is the port taken?)", srv.opts.Host, srv.opts.Port)
	}
	srv.Server = s
	return nil
}

// Connect opens a client connection to the server.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	return nats.Connect(s.ClientURL(), opts...)
}

// Stop shuts the server down and waits for it.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Shutdown()
	s.WaitForShutdown()
}

// slogAdapter turns the server's logger interface into slog calls, and
// notes a failed write to JetStream's files.
type slogAdapter struct {
	l      *slog.Logger
	failed *atomic.Bool
}

// Notices (the start-up banner, connection chatter) go to debug: clawmem
// logs its own start-up; the server's warnings and errors stay visible.
func (a *slogAdapter) Noticef(format string, v ...any) { a.l.Debug(fmt.Sprintf(format, v...)) }
func (a *slogAdapter) Warnf(format string, v ...any)   { a.l.Warn(fmt.Sprintf(format, v...)) }
func (a *slogAdapter) Fatalf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a *slogAdapter) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if a.failed != nil && (strings.Contains(msg, "ritical write error") || strings.Contains(msg, "no space left on device")) {
		a.failed.Store(true)
	}
	a.l.Error(msg)
}
func (a *slogAdapter) Debugf(format string, v ...any) { a.l.Debug(fmt.Sprintf(format, v...)) }
func (a *slogAdapter) Tracef(format string, v ...any) { a.l.Debug(fmt.Sprintf(format, v...)) }

// DiskReserve is the free space below which the store directory's disk
// counts as full: ingest refuses events (HTTP 507) before JetStream's
// writes fail.
const DiskReserve = 32 << 20

// ErrDiskFull is what Guard's check returns while the disk is full.
var ErrDiskFull = errors.New("the data dir's disk is full")

// Free is the space left on the store directory's filesystem.
func (srv *Server) Free() (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(srv.opts.StoreDir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// CheckDisk returns ErrDiskFull (wrapped, with the figures) while the store
// directory's disk has less than DiskReserve free.
func (srv *Server) CheckDisk() error {
	free, err := srv.Free()
	if err != nil || free >= DiskReserve {
		return nil
	}
	return fmt.Errorf("%w: %d MB free of the %d MB kept in reserve; events are refused until space is freed", ErrDiskFull, free>>20, DiskReserve>>20)
}

// Guard watches the store directory's disk until ctx ends: once JetStream
// has failed a write (its file store then refuses all writes) and the disk
// has room again, it restarts the server on the same port and directory,
// so clawmem recovers by itself when space returns. Clients reconnect.
func (srv *Server) Guard(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !srv.writeFailed.Load() || srv.CheckDisk() != nil {
			continue
		}
		srv.log.Warn("JetStream failed writes while the disk was full; there is room again: restarting the embedded NATS server")
		if err := srv.Restart(); err != nil {
			srv.log.Error("embedded NATS restart failed; will try again", "err", err)
			continue
		}
		srv.writeFailed.Store(false)
		srv.log.Info("embedded NATS restarted", "url", srv.ClientURL())
	}
}

// Restart stops the server and starts it again with the same options.
func (srv *Server) Restart() error {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.Server.Shutdown()
	srv.Server.WaitForShutdown()
	var err error
	for range 50 { // the port may linger a moment
		var s *server.Server
		var opts *server.Options
		if opts, err = srv.options(); err != nil {
			return err
		}
		if s, err = server.NewServer(opts); err == nil {
			srv.opts = opts
			if err = srv.run(s); err == nil {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}
