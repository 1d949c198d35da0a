package instance

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/internal/natsauth"
)

// LocalNATS is the NATS of the `clawmem up` using this data dir, else the
// default embedded address.
func LocalNATS(cfg *config.Config) string {
	if info, ok := ReadRunInfo(cfg.DataDir); ok && info.NATSURL != "" {
		return info.NATSURL
	}
	return fmt.Sprintf("nats://127.0.0.1:%d", cfg.NATS.Port)
}

// Connect connects to the NATS server at url as name, reconnecting for
// ever, with the configured credentials (nats.credentials: a .creds file
// or an nkey seed), else as clawmem's own user of the data dir, which the
// embedded server requires.
func Connect(url string, cfg *config.Config, name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(500 * time.Millisecond)}
	auth, err := credentials(cfg)
	if err != nil {
		return nil, err
	}
	if auth != nil {
		opts = append(opts, auth)
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		if errors.Is(err, nats.ErrAuthorization) {
			return nil, fmt.Errorf("connect to NATS at %s: %w (the server wants credentials: clawmem's embedded server admits the "+
				"processes of its own data dir (--data-dir) and agents given credentials by `clawmem agent add`; "+
				"elsewhere set nats.credentials)", url, err)
		}
		return nil, fmt.Errorf("connect to NATS at %s: %w (is `clawmem up` running?)", url, err)
	}
	return nc, nil
}

// credentials is the option that authenticates a connection: the
// configured credentials file (a .creds file, or an nkey seed as `clawmem
// agent add` writes), else the data dir's own seed when it has one. A
// server that requires no credentials ignores them, and an nkey proves
// itself by signing the server's nonce, so the seed never leaves the
// machine.
func credentials(cfg *config.Config) (nats.Option, error) {
	path, err := envsubst.Expand(cfg.NATS.Credentials)
	if err != nil {
		return nil, fmt.Errorf("nats.credentials: %w", err)
	}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("nats.credentials: %w", err)
		}
		if strings.HasPrefix(strings.TrimSpace(string(b)), "SU") {
			return natsauth.ClientOption(path)
		}
		return nats.UserCredentials(path), nil
	}
	seed := natsauth.AdminSeed(cfg.DataDir)
	if _, err := os.Stat(seed); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return natsauth.ClientOption(seed)
}
