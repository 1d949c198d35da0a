package instance

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/internal/natsauth"
	"github.com/clawmem/clawmem/internal/natsembed"
)

// A client of another data dir meets the embedded server's credentials:
// the error says what to do, and the instance's own data dir connects.
func TestConnectNeedsTheDataDirsCredentials(t *testing.T) {
	own, other := t.TempDir(), t.TempDir()
	s, err := natsembed.Start(natsembed.Options{StoreDir: filepath.Join(own, "nats"), Port: -1,
		Base: func() (*server.Options, error) { return natsauth.ServerOptions(own) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	cfg, err := config.Load("", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Connect(s.ClientURL(), cfg, "t"); err == nil || !strings.Contains(err.Error(), "clawmem agent add") {
		t.Fatalf("another data dir's connect: %v, want the credentials hint", err)
	}
	cfg.DataDir = own
	nc, err := Connect(s.ClientURL(), cfg, "t")
	if err != nil {
		t.Fatalf("the instance's own data dir: %v", err)
	}
	nc.Close()
	cfg.DataDir = other
	cfg.NATS.Credentials = natsauth.AdminSeed(own)
	nc, err = Connect(s.ClientURL(), cfg, "t")
	if err != nil {
		t.Fatalf("nats.credentials naming a seed: %v", err)
	}
	nc.Close()
}
