package distill

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/clawmem/clawmem/schemas"
)

// ErrNoSessionFile is wrapped when no transcript file matches a session.
var ErrNoSessionFile = errors.New("no session transcript file found")

// StateDirEnv overrides OpenClaw's state directory, as in OpenClaw itself.
const StateDirEnv = "OPENCLAW_STATE_DIR"

const (
	jsonlExt    = ".jsonl"
	resetMarker = ".jsonl.reset."
	topicMarker = "-topic-"
)

// sessionIDPattern admits OpenClaw's session ids (UUIDs, slugs) and nothing
// that could step out of the sessions directory or act as a glob.
var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// DefaultStateDir is $OPENCLAW_STATE_DIR (with ~ expanded), else
// ~/.openclaw.
func DefaultStateDir() (string, error) {
	if dir := os.Getenv(StateDirEnv); dir != "" {
		return ExpandHome(dir), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("distill: no home directory for the OpenClaw state dir; set %s: %w", StateDirEnv, err)
	}
	return filepath.Join(home, ".openclaw"), nil
}

// ExpandHome resolves a leading ~/ the way OpenClaw does for its own
// paths; without a home directory the path is left as it is.
func ExpandHome(path string) string {
	rest, ok := strings.CutPrefix(path, "~"+string(filepath.Separator))
	if !ok && path != "~" {
		return path
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return path
	}
	return filepath.Join(home, rest)
}

// SessionsDir is <stateDir>/agents/<agentID>/sessions.
func SessionsDir(stateDir, agentID string) (string, error) {
	if err := schemas.ValidateAgentID(agentID); err != nil {
		return "", fmt.Errorf("distill: %w", err)
	}
	if stateDir == "" {
		return "", fmt.Errorf("distill: %w: OpenClaw state dir is empty", schemas.ErrInvalid)
	}
	return filepath.Join(stateDir, "agents", agentID, "sessions"), nil
}

// ResolveSessionFile finds the transcript of one session, in the seed's
// order:
//
//  1. hint, the sessionFile an event named. Only its base name is used, looked
//     up in the agent's sessions directory, so a payload cannot point the
//     distiller at any other file (and a worker on another machine with
//     another state dir still finds it). A hint inside a .reset. file falls
//     back to its non-reset base file; a base file that is gone falls back to
//     its newest .reset. rotation.
//  2. <sessionID>.jsonl.
//  3. The newest <sessionID>.jsonl.reset.<timestamp>: OpenClaw renames the
//     file on /new, before the distiller gets to it.
//  4. The newest topic thread <sessionID>-topic-<id>.jsonl.
//  5. With no sessionID at all: the most recently written non-reset .jsonl in
//     the directory. With a sessionID this step is skipped, since another
//     session's file is a wrong answer, not a fallback.
func ResolveSessionFile(stateDir, agentID, sessionID, hint string) (string, error) {
	dir, err := SessionsDir(stateDir, agentID)
	if err != nil {
		return "", err
	}
	if sessionID != "" && !validSessionID(sessionID) {
		return "", fmt.Errorf("distill: %w: session id %q may only contain letters, digits, '.', '_' and '-'", schemas.ErrInvalid, sessionID)
	}
	if hint != "" {
		if p, ok, err := resolveHint(dir, hint); err != nil || ok {
			return p, err
		}
	}
	if sessionID == "" {
		if hint == "" {
			return newestFile(dir, isLiveJSONL)
		}
		return "", fmt.Errorf("distill: %w: session file %q not in %s", ErrNoSessionFile, filepath.Base(hint), dir)
	}
	return resolveByID(dir, sessionID)
}

func validSessionID(id string) bool {
	return sessionIDPattern.MatchString(id) && !strings.Contains(id, "..")
}

// resolveHint applies step 1; ok is false when nothing the hint names exists.
func resolveHint(dir, hint string) (string, bool, error) {
	name := filepath.Base(filepath.Clean(hint))
	if !strings.Contains(name, jsonlExt) || strings.ContainsAny(name, `/\`) {
		return "", false, nil // not a transcript's name: ignore it
	}
	if isFile(filepath.Join(dir, name)) {
		return filepath.Join(dir, name), true, nil
	}
	if i := strings.Index(name, resetMarker); i >= 0 {
		base := name[:i+len(jsonlExt)]
		if isFile(filepath.Join(dir, base)) {
			return filepath.Join(dir, base), true, nil
		}
		return "", false, nil
	}
	if strings.HasSuffix(name, jsonlExt) {
		p, err := newestReset(dir, name)
		if err == nil {
			return p, true, nil
		}
		if !errors.Is(err, ErrNoSessionFile) {
			return "", false, err
		}
	}
	return "", false, nil
}

// resolveByID applies steps 2 to 4.
func resolveByID(dir, sessionID string) (string, error) {
	canonical := sessionID + jsonlExt
	if p := filepath.Join(dir, canonical); isFile(p) {
		return p, nil
	}
	if p, err := newestReset(dir, canonical); !errors.Is(err, ErrNoSessionFile) {
		return p, err
	}
	topicPrefix := sessionID + topicMarker
	p, err := newestFile(dir, func(name string) bool {
		return strings.HasPrefix(name, topicPrefix) && strings.HasSuffix(name, jsonlExt)
	})
	if errors.Is(err, ErrNoSessionFile) {
		return "", fmt.Errorf("distill: %w: session %s in %s", ErrNoSessionFile, sessionID, dir)
	}
	return p, err
}

// newestReset finds the newest <base>.reset.<ts>. OpenClaw's timestamps are
// ISO 8601 with ':' as '-', so their names sort in time order.
func newestReset(dir, base string) (string, error) {
	names, err := listDir(dir)
	if err != nil {
		return "", err
	}
	prefix := base + ".reset."
	var best string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) && n > best {
			best = n
		}
	}
	if best == "" {
		return "", fmt.Errorf("distill: %w: no %s* in %s", ErrNoSessionFile, prefix, dir)
	}
	return filepath.Join(dir, best), nil
}

// newestFile is the most recently modified regular file whose name keep
// accepts; ties go to the greater name, so the answer is deterministic.
func newestFile(dir string, keep func(string) bool) (string, error) {
	names, err := listDir(dir)
	if err != nil {
		return "", err
	}
	var best string
	var bestTime time.Time
	for _, n := range names {
		if !keep(n) {
			continue
		}
		info, err := os.Stat(filepath.Join(dir, n))
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if t := info.ModTime(); best == "" || t.After(bestTime) || t.Equal(bestTime) && n > best {
			best, bestTime = n, t
		}
	}
	if best == "" {
		return "", fmt.Errorf("distill: %w: in %s", ErrNoSessionFile, dir)
	}
	return filepath.Join(dir, best), nil
}

func isLiveJSONL(name string) bool { return strings.HasSuffix(name, jsonlExt) }

// listDir lists dir's entry names, sorted; a missing directory is no match.
func listDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("distill: %w: no sessions directory %s", ErrNoSessionFile, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("distill: list sessions: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}
