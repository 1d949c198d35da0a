package natsauth_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/natsauth"
	"github.com/clawmem/clawmem/internal/natsembed"
)

func start(t *testing.T, dataDir string) *natsembed.Server {
	t.Helper()
	s, err := natsembed.Start(natsembed.Options{StoreDir: filepath.Join(dataDir, "nats"), Port: -1,
		Base: func() (*server.Options, error) { return natsauth.ServerOptions(dataDir) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func connectAs(t *testing.T, url, seed string) (*nats.Conn, error) {
	t.Helper()
	var opts []nats.Option
	if seed != "" {
		o, err := natsauth.ClientOption(seed)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, o)
	}
	nc, err := nats.Connect(url, opts...)
	if err == nil {
		t.Cleanup(nc.Close)
	}
	return nc, err
}

// The embedded server admits only holders of the data dir's seeds: no
// anonymous connection, an agent's user reaches only its own subjects, and
// an agent added or removed while the server runs is in or out after a
// reload.
func TestEmbeddedServerRequiresCredentials(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir)
	url := s.ClientURL()

	if _, err := connectAs(t, url, ""); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("anonymous connect: %v, want an authorization violation", err)
	}
	for _, p := range []string{natsauth.AdminSeed(dir), filepath.Dir(natsauth.AdminSeed(dir))} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is mode %v: others may read it", p, fi.Mode().Perm())
		}
	}
	admin, err := connectAs(t, url, natsauth.AdminSeed(dir))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"clawmem.t.>"}}); err != nil {
		t.Fatalf("clawmem's user cannot use JetStream: %v", err)
	}
	sub, err := admin.Subscribe("clawmem.v1.*.recall", func(m *nats.Msg) { _ = m.Respond([]byte(m.Subject)) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}

	alice, created, err := natsauth.AddAgent(dir, "alice")
	if err != nil || !created {
		t.Fatalf("add alice: %v %v", created, err)
	}
	if _, err := connectAs(t, url, alice); err == nil {
		t.Fatal("alice connected before the server was reloaded")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	anc, err := connectAs(t, url, alice)
	if err != nil {
		t.Fatalf("alice after reload: %v", err)
	}
	m, err := requestEventually(anc, "clawmem.v1.alice.recall", []byte("{}"), 5*time.Second)
	if err != nil || string(m.Data) != "clawmem.v1.alice.recall" {
		t.Fatalf("alice's own recall: %v", err)
	}
	if _, err := anc.Request("clawmem.v1.bob.recall", []byte("{}"), 500*time.Millisecond); err == nil {
		t.Fatal("alice reached bob's recall")
	}
	if _, err := anc.Request("$JS.API.INFO", nil, 500*time.Millisecond); err == nil {
		t.Fatal("alice reached the JetStream API")
	}

	kept := filepath.Join(t.TempDir(), "alice.nk")
	if b, err := os.ReadFile(alice); err != nil || os.WriteFile(kept, b, 0o600) != nil {
		t.Fatal(err)
	}
	if err := natsauth.RemoveAgent(dir, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := connectAs(t, url, kept); err == nil {
		t.Fatal("alice connected after her credentials were removed")
	}
	if agents, _ := natsauth.Agents(dir); len(agents) != 0 {
		t.Fatalf("agents after removal: %v", agents)
	}
}

// A data dir from before credentials kept its streams in the global
// account; the first start with credentials moves them, so nothing in them
// is lost.
func TestMigrateStoreKeepsStreams(t *testing.T) {
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "nats")
	old, err := natsembed.Start(natsembed.Options{StoreDir: storeDir, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := old.Connect()
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"clawmem.keep"}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish(ctx, "clawmem.keep", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	nc.Close()
	old.Stop()

	moved, err := natsauth.MigrateStore(storeDir)
	if err != nil || !moved {
		t.Fatalf("migrate: %v %v", moved, err)
	}
	if moved, err := natsauth.MigrateStore(storeDir); err != nil || moved {
		t.Fatalf("second migrate: %v %v, want nothing to do", moved, err)
	}
	s := start(t, dir)
	admin, err := connectAs(t, s.ClientURL(), natsauth.AdminSeed(dir))
	if err != nil {
		t.Fatal(err)
	}
	js, _ = jetstream.New(admin)
	st, err := js.Stream(ctx, "KEEP")
	if err != nil {
		t.Fatalf("stream after migration: %v", err)
	}
	if n := st.CachedInfo().State.Msgs; n != 3 {
		t.Fatalf("%d messages after migration, want 3", n)
	}
}

// requestEventually asks until the service answers: after a restart of the
// server the responder's connection comes back a moment after the asker's.
func requestEventually(nc *nats.Conn, subject string, data []byte, wait time.Duration) (*nats.Msg, error) {
	deadline := time.Now().Add(wait)
	for {
		m, err := nc.Request(subject, data, time.Second)
		if err == nil || time.Now().After(deadline) {
			return m, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A gateway's user reaches each of its agents and no other; a gateway for
// every agent ("*") reaches any; both beside an agent's own user.
func TestGatewayUsers(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := natsauth.AddAgent(dir, "main"); err != nil {
		t.Fatal(err)
	}
	gw, changed, err := natsauth.AddUser(dir, "gw", []string{"work", "main"})
	if err != nil || !changed {
		t.Fatalf("add gateway: %v %v", changed, err)
	}
	if _, changed, _ := natsauth.AddUser(dir, "gw", []string{"main", "work"}); changed {
		t.Error("the same gateway again counted as a change")
	}
	all, _, err := natsauth.AddUser(dir, "laptop", []string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, dir)
	admin, err := connectAs(t, s.ClientURL(), natsauth.AdminSeed(dir))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := admin.Subscribe("clawmem.v1.*.recall", func(m *nats.Msg) { _ = m.Respond([]byte(m.Subject)) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = admin.Flush()
	for _, c := range []struct {
		seed  string
		agent string
		ok    bool
	}{
		{gw, "main", true}, {gw, "work", true}, {gw, "other", false},
		{all, "main", true}, {all, "anyone", true},
		{natsauth.AgentSeed(dir, "main"), "main", true}, {natsauth.AgentSeed(dir, "main"), "work", false},
	} {
		nc, err := connectAs(t, s.ClientURL(), c.seed)
		if err != nil {
			t.Fatal(err)
		}
		_, err = nc.Request("clawmem.v1."+c.agent+".recall", nil, 2*time.Second)
		if (err == nil) != c.ok {
			t.Errorf("%s asking for %s: %v, want allowed %v", filepath.Base(c.seed), c.agent, err, c.ok)
		}
	}
}
