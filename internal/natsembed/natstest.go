package natsembed

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StartTest starts a server on a random loopback port with JetStream in a
// temp dir, stopped when the test ends, and returns it with a connection
// and a JetStream context.
func StartTest(tb testing.TB) (*Server, *nats.Conn, jetstream.JetStream) {
	tb.Helper()
	return StartTestIn(tb, tb.TempDir())
}

// StartTestIn is StartTest with JetStream's files in dir, for a test that
// reads them.
func StartTestIn(tb testing.TB, dir string) (*Server, *nats.Conn, jetstream.JetStream) {
	tb.Helper()
	s, err := Start(Options{StoreDir: dir, Port: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	nc, js := ConnectTest(tb, s)
	return s, nc, js
}

// ConnectTest opens a connection to s, closed when the test ends, and its
// JetStream context; a test that takes s down and back passes Redial.
func ConnectTest(tb testing.TB, s *Server, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	tb.Helper()
	nc, err := s.Connect(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	return nc, js
}

// Redial makes a test's connection come back at once, however long its
// server is down.
var Redial = []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}

// StartTestCluster starts an n-node JetStream cluster in temp dirs, shut
// down when the test ends.
func StartTestCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	c, err := StartCluster(tb.TempDir(), n)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Shutdown)
	return c
}
