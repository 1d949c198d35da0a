package scopes

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

func seedConfig() Config {
	return Config{
		Default: "global",
		Definitions: map[string]Definition{
			"global":            {Description: "Shared knowledge"},
			"agent:discord-bot": {Description: "Discord bot private"},
			"custom:work":       {Description: "Work-related memories"},
		},
		AgentAccess: map[string][]string{
			"discord-bot": {"global", "agent:discord-bot"},
			"code-agent":  {"global", "agent:code-agent", "custom:work"},
			"reader":      {"custom:work"},
		},
	}
}

func TestAccess(t *testing.T) {
	m, err := New(seedConfig())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		agent      string
		accessible []string
		def        string
	}{
		{"main", []string{"agent:main", "global"}, "agent:main"},
		{"discord-bot", []string{"agent:discord-bot", "global"}, "agent:discord-bot"},
		{"code-agent", []string{"agent:code-agent", "custom:work", "global"}, "agent:code-agent"},
		{"reader", []string{"custom:work"}, "global"}, // own scope not granted: the configured default
		{"a.b", nil, "global"},
		{"*", nil, "global"},
		{">", nil, "global"},
		{"../x", nil, "global"},
		{"", nil, "global"},
	}
	for _, c := range cases {
		if got := m.Accessible(c.agent); !slices.Equal(got, c.accessible) {
			t.Errorf("Accessible(%q) = %v, want %v", c.agent, got, c.accessible)
		}
		if got := m.Default(c.agent); got != c.def {
			t.Errorf("Default(%q) = %q, want %q", c.agent, got, c.def)
		}
	}
	if !m.IsAccessible("custom:work", "code-agent") || m.IsAccessible("custom:work", "main") || m.IsAccessible("agent:main", "discord-bot") {
		t.Error("IsAccessible")
	}
	f := m.Filter("main")
	if !f.Allows("global") || !f.Allows("agent:main") || f.Allows("agent:other") || f.All() {
		t.Errorf("filter %v", f)
	}
	if bad := m.Filter("a.b"); !bad.Denies() {
		t.Errorf("invalid agent id must get a deny-all filter, got %v", bad)
	}
}

func TestResolve(t *testing.T) {
	m, _ := New(seedConfig())
	cases := []struct {
		agent, requested, want string
		err                    error
	}{
		{"main", "", "agent:main", nil},
		{"main", "global", "global", nil},
		{"main", "agent:main", "agent:main", nil},
		{"main", "agent:other", "", engine.ErrScopeDenied},
		{"main", "custom:work", "", engine.ErrScopeDenied},
		{"code-agent", "custom:work", "custom:work", nil},
		{"main", "' OR 1=1 --", "", schemas.ErrInvalid},
		{"main", "mystery", "", ErrUnknownScope},
		{"a.b", "", "", schemas.ErrInvalid},
	}
	for _, c := range cases {
		got, err := m.Resolve(c.agent, c.requested)
		if got != c.want || !errors.Is(err, c.err) && !(err == nil && c.err == nil) {
			t.Errorf("Resolve(%q, %q) = %q, %v; want %q, %v", c.agent, c.requested, got, err, c.want, c.err)
		}
	}
}

func TestParseAndBuilders(t *testing.T) {
	cases := map[string][2]string{
		"agent:main":    {"agent", "main"},
		"global":        {"global", ""},
		"custom:work":   {"custom", "work"},
		"project:myapp": {"project", "myapp"},
		"user:john":     {"user", "john"},
		"agent:":        {"", "agent:"},
		"team:x":        {"", "team:x"},
	}
	for in, want := range cases {
		if typ, id := Parse(in); typ != want[0] || id != want[1] {
			t.Errorf("Parse(%q) = %q %q", in, typ, id)
		}
	}
	if AgentScope("main") != "agent:main" || CustomScope("work") != "custom:work" || ProjectScope("myapp") != "project:myapp" || UserScope("john") != "user:john" {
		t.Error("builders")
	}
}

func TestConfigValidation(t *testing.T) {
	if _, err := New(Config{Default: "custom:missing-but-builtin"}); err != nil {
		t.Errorf("a built-in-typed default needs no definition: %v", err)
	}
	if _, err := New(Config{Default: "nowhere"}); err == nil || !strings.Contains(err.Error(), "not defined") {
		t.Errorf("undefined default: %v", err)
	}
	if _, err := New(Config{Definitions: map[string]Definition{"bad scope": {}}}); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("bad definition: %v", err)
	}
	if _, err := New(Config{AgentAccess: map[string][]string{"a.b": {"global"}}}); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("bad agent id: %v", err)
	}
	m, err := New(Config{AgentAccess: map[string][]string{"x": {"global", "team-room"}}})
	if err != nil {
		t.Fatal(err)
	}
	if w := m.Warnings(); len(w) != 1 || !strings.Contains(w[0], "team-room") {
		t.Errorf("warnings %v", w)
	}
	if !slices.Contains(m.All(), "global") {
		t.Error("global must always be defined")
	}
}

func TestManagement(t *testing.T) {
	m, _ := New(seedConfig())
	if ok, err := m.RemoveDefinition("global"); ok || err == nil {
		t.Error("global was removed")
	}
	if err := m.AddDefinition("custom:new", Definition{Description: "new"}); err != nil {
		t.Fatal(err)
	}
	if d, ok := m.Definition("custom:new"); !ok || d.Description != "new" {
		t.Error("definition not added")
	}
	if ok, err := m.RemoveDefinition("custom:new"); !ok || err != nil {
		t.Errorf("remove: %v %v", ok, err)
	}
	if err := m.AddDefinition("bad scope", Definition{}); err == nil {
		t.Error("bad scope defined")
	}
	if err := m.SetAgentAccess("main", []string{"custom:work"}); err != nil {
		t.Fatal(err)
	}
	if got := m.Accessible("main"); !slices.Equal(got, []string{"custom:work"}) {
		t.Errorf("after SetAgentAccess: %v", got)
	}
	if !m.RemoveAgentAccess("main") || !slices.Equal(m.Accessible("main"), []string{"agent:main", "global"}) {
		t.Error("RemoveAgentAccess")
	}
	st := m.Stats()
	if st.TotalScopes != 3 || st.AgentsWithCustomAccess != 3 || st.ScopesByType["agent"] != 1 || st.ScopesByType["global"] != 1 {
		t.Errorf("stats %+v", st)
	}
	exported := m.Export()
	m2, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.Import(exported); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m2.Accessible("code-agent"), m.Accessible("code-agent")) || !slices.Equal(m2.All(), m.All()) {
		t.Error("export/import round trip")
	}
	if err := m2.Import(Config{Default: "nowhere"}); err == nil || !slices.Equal(m2.All(), m.All()) {
		t.Error("a failed import changed the configuration")
	}
}
