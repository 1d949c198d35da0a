// Package natsembed runs a NATS server with JetStream inside the process:
// what `clawmem up` uses when no external server is configured, and what
// every test uses instead of a mock.
package natsembed

import (
	"fmt"
	"log/slog"
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
}

// Sync is JetStream's flush policy: Always flushes every write before it
// is acknowledged; otherwise every Interval (0: the server's default, 2
// minutes).
type Sync struct {
	Always   bool
	Interval time.Duration
}

// Server is a running embedded NATS server.
type Server struct{ *server.Server }

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
	opts := &server.Options{
		ServerName: "clawmem",
		Host:       o.Host,
		Port:       o.Port,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		MaxPayload: o.MaxPayload,
		NoSigs:     true,
		// SyncAlways flushes each write; the interval still bounds what a
		// write that bypasses it could leave unflushed.
		SyncAlways:        o.Sync.Always,
		SyncInterval:      o.Sync.Interval,
		JetStreamMaxStore: o.MaxStore,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if o.Logger != nil {
		s.SetLoggerV2(&slogAdapter{l: o.Logger.With("component", "nats")}, false, false, false)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("embedded nats did not start on %s:%d (is the port taken?)", o.Host, o.Port)
	}
	return &Server{s}, nil
}

// Connect opens a client connection to the server.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	return nats.Connect(s.ClientURL(), opts...)
}

// Stop shuts the server down and waits for it.
func (s *Server) Stop() {
	s.Shutdown()
	s.WaitForShutdown()
}

// slogAdapter turns the server's logger interface into slog calls.
type slogAdapter struct{ l *slog.Logger }

// Notices (the start-up banner, connection chatter) go to debug: clawmem
// logs its own start-up; the server's warnings and errors stay visible.
func (a *slogAdapter) Noticef(format string, v ...any) { a.l.Debug(fmt.Sprintf(format, v...)) }
func (a *slogAdapter) Warnf(format string, v ...any)   { a.l.Warn(fmt.Sprintf(format, v...)) }
func (a *slogAdapter) Fatalf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a *slogAdapter) Errorf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a *slogAdapter) Debugf(format string, v ...any)  { a.l.Debug(fmt.Sprintf(format, v...)) }
func (a *slogAdapter) Tracef(format string, v ...any)  { a.l.Debug(fmt.Sprintf(format, v...)) }
