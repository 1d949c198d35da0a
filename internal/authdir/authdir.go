// Package authdir keeps the credentials a clawmem data dir generates for
// itself at first start: the embedded NATS server's users, the hook ingest
// token and the web console's token. They live in <dataDir>/auth (mode
// 0700), one owner-only file (0600) each, so only the OS user who owns the
// data dir can read them; every clawmem command run by that user finds them
// there without flags.
package authdir

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Dir is where a data dir keeps its credentials.
func Dir(dataDir string) string { return filepath.Join(dataDir, "auth") }

// Names of the token files in Dir.
const (
	// IngestToken is the bearer token of the hook ingest endpoint.
	IngestToken = "ingest.token"
	// ConsoleToken is the web console's admin token.
	ConsoleToken = "console.token"
	// MCPToken is the bearer token of `clawmem mcp --http` on loopback.
	MCPToken = "mcp.token"
	// AgentTokens is the dir (in Dir) of the agents' HTTP API tokens, one
	// file per agent (AgentToken).
	AgentTokens = "http"
)

// AgentToken is the name (for Token and Read) of agent's HTTP API token
// file: the bearer token that acts for that agent alone.
func AgentToken(agent string) string { return filepath.Join(AgentTokens, agent+".token") }

// Path is the file name holds in dataDir's auth dir.
func Path(dataDir, name string) string { return filepath.Join(Dir(dataDir), name) }

// Token reads the token file name, creating it with a new random token
// when it does not exist yet. Concurrent first starts agree on one token:
// the file is created exclusively, and a loser reads the winner's.
func Token(dataDir, name string) (string, error) {
	if tok, err := Read(dataDir, name); err == nil {
		return tok, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := EnsureDir(dataDir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(Path(dataDir, name)), 0o700); err != nil {
		return "", err
	}
	tok := NewToken()
	if err := WriteNew(Path(dataDir, name), []byte(tok+"\n")); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Read(dataDir, name)
		}
		return "", err
	}
	return tok, nil
}

// Read reads the token file name; fs.ErrNotExist when there is none.
func Read(dataDir, name string) (string, error) {
	b, err := os.ReadFile(Path(dataDir, name))
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s is empty: delete it and start clawmem again to make a new one", Path(dataDir, name))
	}
	return tok, nil
}

// EnsureDir creates the auth dir (and the data dir) owner-only, and
// tightens an existing auth dir that others could read.
func EnsureDir(dataDir string) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	d := Dir(dataDir)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	return os.Chmod(d, 0o700)
}

// WriteNew creates path owner-only with b, failing with fs.ErrExist when
// it exists. The file appears whole or not at all.
func WriteNew(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// A hard link fails when path exists, which a rename would not.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		return err
	}
	return nil
}

// NewToken is 32 random bytes, URL-safe base64: 256 bits, nothing to guess.
func NewToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
