package distill

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clawmem/clawmem/schemas"
)

func TestResolveSessionFile(t *testing.T) {
	const sid = "0b5e2c1a-9d2f-4a57-8e11-3c4b5a6d7e8f"
	cases := []struct {
		name    string
		files   []string // created oldest first
		session string
		hint    string
		want    string // file name; "" means ErrNoSessionFile
	}{
		{name: "canonical", files: []string{sid + ".jsonl", "other.jsonl"}, session: sid, want: sid + ".jsonl"},
		{name: "hint wins", files: []string{sid + ".jsonl", "named.jsonl"}, session: sid, hint: "/home/x/.openclaw/agents/main/sessions/named.jsonl", want: "named.jsonl"},
		{name: "hint elsewhere uses base name", files: []string{"named.jsonl"}, session: "", hint: "/other/machine/named.jsonl", want: "named.jsonl"},
		{name: "reset hint recovers base", files: []string{sid + ".jsonl"}, session: sid, hint: sid + ".jsonl.reset.2026-05-01T10-00-00.000Z", want: sid + ".jsonl"},
		{name: "gone hint falls back to its newest reset", files: []string{"named.jsonl.reset.2026-05-01T10-00-00.000Z", "named.jsonl.reset.2026-05-02T09-00-00.000Z"}, hint: "named.jsonl", want: "named.jsonl.reset.2026-05-02T09-00-00.000Z"},
		{name: "missing hint falls back to session id", files: []string{sid + ".jsonl"}, session: sid, hint: "gone.jsonl", want: sid + ".jsonl"},
		{name: "non-transcript hint ignored", files: []string{sid + ".jsonl"}, session: sid, hint: "/etc/passwd", want: sid + ".jsonl"},
		{name: "newest reset after /new", files: []string{
			sid + ".jsonl.reset.2026-05-02T09-00-00.000Z", sid + ".jsonl.reset.2026-05-01T10-00-00.000Z", sid + ".jsonl.deleted.2026-05-03T00-00-00.000Z",
		}, session: sid, want: sid + ".jsonl.reset.2026-05-02T09-00-00.000Z"},
		{name: "topic variant, newest", files: []string{sid + "-topic-1.jsonl", sid + "-topic-2.jsonl", sid + "-topic-3.jsonl.reset.2026-05-02T09-00-00.000Z"}, session: sid, want: sid + "-topic-2.jsonl"},
		{name: "canonical before topic", files: []string{sid + "-topic-1.jsonl", sid + ".jsonl"}, session: sid, want: sid + ".jsonl"},
		{name: "no session id: newest live file", files: []string{"a.jsonl", "b.jsonl", "c.jsonl.reset.2026-05-02T09-00-00.000Z", "sessions.json"}, want: "b.jsonl"},
		{name: "other sessions are not a fallback", files: []string{"a.jsonl"}, session: sid},
		{name: "empty directory", session: sid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			dir := filepath.Join(state, "agents", "main", "sessions")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			base := time.Now().Add(-time.Hour)
			for i, name := range c.files {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				mt := base.Add(time.Duration(i) * time.Minute)
				if err := os.Chtimes(p, mt, mt); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ResolveSessionFile(state, "main", c.session, c.hint)
			if c.want == "" {
				if !errors.Is(err, ErrNoSessionFile) {
					t.Fatalf("got %q, %v; want ErrNoSessionFile", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != filepath.Join(dir, c.want) {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestResolveSessionFileRejectsPaths(t *testing.T) {
	state := t.TempDir()
	cases := []struct{ agent, session string }{
		{"../other", "s"},
		{"main/x", "s"},
		{"", "s"},
		{"main", "../../etc/passwd"},
		{"main", "a/b"},
		{"main", ".."},
		{"main", "a..b"},
		{"main", "*"},
		{"main", `a\b`},
	}
	for _, c := range cases {
		if _, err := ResolveSessionFile(state, c.agent, c.session, ""); !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("agent %q session %q: err = %v, want ErrInvalid", c.agent, c.session, err)
		}
	}
	if _, err := ResolveSessionFile("", "main", "s", ""); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("empty state dir: %v", err)
	}
}

func TestDefaultStateDir(t *testing.T) {
	t.Setenv(StateDirEnv, "/srv/openclaw")
	if d, err := DefaultStateDir(); err != nil || d != "/srv/openclaw" {
		t.Errorf("%q %v", d, err)
	}
	t.Setenv(StateDirEnv, "")
	t.Setenv("HOME", "/home/ann")
	if d, err := DefaultStateDir(); err != nil || d != "/home/ann/.openclaw" {
		t.Errorf("%q %v", d, err)
	}
}
