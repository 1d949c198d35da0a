package natsembed

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Cluster is a JetStream cluster of servers in this process, each on its
// own loopback ports and store directory: what the scale-out tests kill
// and restart nodes of. Its ports are fixed at start, so a node restarted
// with Restart rejoins under its old name and routes.
type Cluster struct {
	opts    []*server.Options
	servers []*server.Server
}

// StartCluster starts n clustered servers with JetStream under dir and
// waits until JetStream has a meta leader.
func StartCluster(dir string, n int) (*Cluster, error) {
	if n < 1 {
		return nil, errors.New("natsembed: a cluster needs at least one server")
	}
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	routes := make([]*url.URL, n)
	for i := range n {
		routes[i] = &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[n+i])}
	}
	c := &Cluster{}
	for i := range n {
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("clawmem-%d", i+1),
			Host:       "127.0.0.1",
			Port:       ports[i],
			JetStream:  true,
			StoreDir:   filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			MaxPayload: 8 << 20,
			NoSigs:     true,
			Cluster:    server.ClusterOpts{Name: "clawmem", Host: "127.0.0.1", Port: ports[n+i]},
			Routes:     routes,
		})
	}
	c.servers = make([]*server.Server, n)
	for i := range n {
		if err := c.start(i); err != nil {
			c.Shutdown()
			return nil, err
		}
	}
	if err := c.WaitReady(30 * time.Second); err != nil {
		c.Shutdown()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(i int) error {
	s, err := server.NewServer(c.opts[i])
	if err != nil {
		return fmt.Errorf("cluster node %d: %w", i+1, err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return fmt.Errorf("cluster node %d did not start", i+1)
	}
	c.servers[i] = s
	return nil
}

// WaitReady waits until every running node knows JetStream's meta leader.
func (c *Cluster) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ready := true
		for _, s := range c.servers {
			if s != nil && (!s.JetStreamEnabled() || s.JetStreamIsClustered() && !s.JetStreamIsCurrent()) {
				ready = false
			}
		}
		if ready && c.leaderKnown() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("natsembed: the cluster has no JetStream meta leader")
}

func (c *Cluster) leaderKnown() bool {
	for _, s := range c.servers {
		if s != nil && s.JetStreamIsLeader() {
			return true
		}
	}
	return false
}

// URLs is every node's client URL, comma-separated, as nats.Connect
// takes them.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.opts))
	for i, o := range c.opts {
		urls[i] = fmt.Sprintf("nats://127.0.0.1:%d", o.Port)
	}
	return strings.Join(urls, ",")
}

// Size is the number of nodes, running or not.
func (c *Cluster) Size() int { return len(c.opts) }

// Stop shuts node i down (as a crash would leave its files: JetStream
// recovers them at Restart).
func (c *Cluster) Stop(i int) {
	if s := c.servers[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.servers[i] = nil
	}
}

// Restart starts node i again on its ports and store directory.
func (c *Cluster) Restart(i int) error {
	if c.servers[i] != nil {
		return fmt.Errorf("cluster node %d is running", i+1)
	}
	return c.start(i)
}

// Shutdown stops every node.
func (c *Cluster) Shutdown() {
	for i := range c.servers {
		c.Stop(i)
	}
}

// freePorts finds n free loopback ports. They are released before the
// servers take them, so another process could win one in between; on
// loopback in a test that is rare enough to retry by hand.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// Reconnect opens another connection to the servers nc knows, so that
// services in one process each have a connection of their own.
func Reconnect(nc *nats.Conn) (*nats.Conn, error) {
	return nats.Connect(strings.Join(nc.Servers(), ","), nats.MaxReconnects(-1))
}
