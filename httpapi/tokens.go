package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/clawmem/clawmem/internal/authdir"
	"github.com/clawmem/clawmem/schemas"
)

// Tokens maps a bearer token to the one agent it acts for. Tokens come
// from configuration (agent → token) and from the data dir's
// auth/http/<agent>.token files, which `clawmem agent token` writes; a
// file added while clawmem runs is found at the first request that
// carries its token (the dir is read again on a miss, at most once a
// second, so a stream of wrong tokens costs one read a second).
//
// Tokens are compared as SHA-256 digests: a lookup by digest reveals
// nothing about a token's content through timing.
type Tokens struct {
	dataDir string
	fixed   map[[32]byte]string

	mu      sync.Mutex
	files   map[[32]byte]string
	scanned time.Time
	now     func() time.Time
}

// NewTokens serves the tokens in configured (agent → token, expanded
// already) and, when dataDir is not empty, those in its auth dir. A
// configured agent id must be valid and a token at least 16 characters.
func NewTokens(dataDir string, configured map[string]string) (*Tokens, error) {
	t := &Tokens{dataDir: dataDir, fixed: map[[32]byte]string{}, now: time.Now}
	for agent, tok := range configured {
		if err := schemas.ValidateAgentID(agent); err != nil {
			return nil, fmt.Errorf("ingest.agentTokens: %w", err)
		}
		tok = strings.TrimSpace(tok)
		if len(tok) < 16 {
			return nil, fmt.Errorf("ingest.agentTokens.%s: a token of at least 16 characters (clawmem agent token makes one)", agent)
		}
		sum := sha256.Sum256([]byte(tok))
		if other, ok := t.fixed[sum]; ok {
			return nil, fmt.Errorf("ingest.agentTokens: agents %q and %q share a token; each needs its own", other, agent)
		}
		t.fixed[sum] = agent
	}
	return t, nil
}

// Agent returns the agent token acts for; ok is false for an unknown
// token.
func (t *Tokens) Agent(token string) (agent string, ok bool) {
	token = strings.TrimSpace(token)
	if token == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(token))
	if a, ok := t.fixed[sum]; ok {
		return a, true
	}
	if t.dataDir == "" {
		return "", false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if a, ok := t.files[sum]; ok {
		if t.stillThere(a, sum) {
			return a, true
		}
		delete(t.files, sum)
	}
	if now := t.now(); t.files == nil || now.Sub(t.scanned) >= time.Second {
		t.files, t.scanned = t.scan(), now
	}
	a, ok := t.files[sum]
	return a, ok
}

// stillThere checks that agent's token file still holds the token: a
// token removed (clawmem agent remove) or replaced stops working at once.
func (t *Tokens) stillThere(agent string, sum [32]byte) bool {
	tok, err := authdir.Read(t.dataDir, authdir.AgentToken(agent))
	if err != nil {
		return false
	}
	got := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(got[:], sum[:]) == 1
}

// scan reads every agent's token file.
func (t *Tokens) scan() map[[32]byte]string {
	out := map[[32]byte]string{}
	entries, err := os.ReadDir(filepath.Join(authdir.Dir(t.dataDir), authdir.AgentTokens))
	if err != nil {
		return out
	}
	for _, e := range entries {
		agent, ok := strings.CutSuffix(e.Name(), ".token")
		if !ok || e.IsDir() || schemas.ValidateAgentID(agent) != nil {
			continue
		}
		tok, err := authdir.Read(t.dataDir, authdir.AgentToken(agent))
		if err != nil {
			continue
		}
		out[sha256.Sum256([]byte(tok))] = agent
	}
	return out
}

// AgentToken returns agent's HTTP API token in dataDir, making it when
// there is none.
func AgentToken(dataDir, agent string) (string, error) {
	if err := schemas.ValidateAgentID(agent); err != nil {
		return "", err
	}
	return authdir.Token(dataDir, authdir.AgentToken(agent))
}

// RemoveAgentToken deletes agent's HTTP API token; removed is false when
// it had none.
func RemoveAgentToken(dataDir, agent string) (removed bool, err error) {
	if err := schemas.ValidateAgentID(agent); err != nil {
		return false, err
	}
	err = os.Remove(authdir.Path(dataDir, authdir.AgentToken(agent)))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
