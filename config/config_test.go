package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/engine/vecindex"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestIndexModes(t *testing.T) {
	t.Setenv(EnvConfig, "")
	c, err := Load("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if c.Store.Index != "auto" {
		t.Fatalf("default store.index = %q, want auto", c.Store.Index)
	}
	if o := c.IndexOptions(); o.Mode != vecindex.IVF || o.ExactBelow != AutoExactBelow {
		t.Fatalf("auto gives %+v, want IVF exact below %d", o, AutoExactBelow)
	}
	for store, want := range map[string]vecindex.Options{
		`"index":"exact"`:                       {Mode: vecindex.Exact},
		`"index":"approximate"`:                 {Mode: vecindex.IVF},
		`"index":"approximate","memory":"int8"`: {Mode: vecindex.IVF, Memory: vecindex.Int8},
		`"memory":"int8"`:                       {Mode: vecindex.IVF, ExactBelow: AutoExactBelow, Memory: vecindex.Int8},
		`"memory":"float32"`:                    {Mode: vecindex.IVF, ExactBelow: AutoExactBelow},
	} {
		index := store
		c, err := Load(writeConfig(t, `{"store":{`+store+`}}`), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if got := c.IndexOptions(); got != want {
			t.Errorf("%s gives %+v, want %+v", index, got, want)
		}
	}
}

func TestLoadRejects(t *testing.T) {
	for name, body := range map[string]string{
		"unknown index": `{"store":{"index":"hnsw"}}`,
		"unknown key":   `{"stroe":{}}`,
		"wrong type":    `{"autoCapture":"yes"}`,
		"not json":      `{"store":`,
		"bad provider":  `{"distill":{"provider":"claude-direct"}}`,
		"maxFinal > 20": `{"distill":{"maxFinal":21}}`,
		"negative":      `{"distill":{"parallelism":-1}}`,
	} {
		if _, err := Load(writeConfig(t, body), t.TempDir()); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.Contains(err.Error(), "config") && !strings.Contains(err.Error(), "store.index") && !strings.Contains(err.Error(), "distill") {
			t.Errorf("%s: error %q does not say where", name, err)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json"), t.TempDir()); err == nil {
		t.Error("an explicit config file that does not exist gave no error")
	}
}

func TestDistillAndWatchDefaults(t *testing.T) {
	t.Setenv(EnvConfig, "")
	t.Setenv("OPENCLAW_STATE_DIR", "/srv/openclaw")
	t.Setenv("OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS", "main, work")
	c, err := Load("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if c.Watch.StateDir != "/srv/openclaw" || !*c.Watch.Enabled || c.Distill.Schedule != "@hourly" || c.Distill.IdleMinutes != 30 ||
		len(c.Distill.Agents) != 2 || c.Distill.Agents[1] != "work" {
		t.Fatalf("defaults: %+v %+v", c.Watch, c.Distill)
	}
	if llm := c.LLMConfig(); llm.Provider != "" {
		t.Fatalf("an LLM is configured by default: %+v", llm)
	}
	if d := c.DistillConfig(); d.MaxFinal != distill.DefaultMaxFinal {
		t.Fatalf("maxFinal unset gives %d, want distill's default (%d)", d.MaxFinal, distill.DefaultMaxFinal)
	}
	if c.Secrets.Mode != "redact" || c.SecretsMode() != redact.ModeRedact || c.DistillConfig().Secrets != redact.ModeRedact {
		t.Fatalf("secrets.mode defaults to %q, want redact", c.Secrets.Mode)
	}
	c, err = Load(writeConfig(t, `{"distill":{"provider":"gemini","maxFinal":0,"timeoutSeconds":5}}`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if d := c.DistillConfig(); d.MaxFinal >= 0 {
		t.Fatalf("maxFinal 0 gives %d, want distill's none (negative)", d.MaxFinal)
	}
	if llm := c.LLMConfig(); llm.Provider != "gemini" || llm.Timeout.Seconds() != 5 {
		t.Fatalf("llm config %+v", llm)
	}
}

// TestStreamAges: the streams' max ages default to 7d, 30d and 30d, take
// days or Go durations within 1h..3650d, and a bad one names its key.
func TestStreamAges(t *testing.T) {
	t.Setenv(EnvConfig, "")
	c, err := Load("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	if ev, tr, dlq := c.Streams.MaxAges(); ev != 7*day || tr != 30*day || dlq != 30*day {
		t.Fatalf("defaults %v %v %v", ev, tr, dlq)
	}
	f, err := Decode([]byte(`{}`), "c.json", Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	shown, err := f.Effective(false)
	if err != nil {
		t.Fatal(err)
	}
	if got := shown["streams"].(map[string]any)["events"].(map[string]any)["maxAge"]; got != "7d" {
		t.Fatalf("config show gives streams.events.maxAge %v", got)
	}
	for _, c := range []struct {
		age  string
		want time.Duration
		err  string
	}{
		{"1h", time.Hour, ""}, {"36h", 36 * time.Hour, ""}, {"90d", 90 * day, ""}, {"3650d", 3650 * day, ""}, {" 2d ", 2 * day, ""},
		{"59m", 0, "allowed range 1h..3650d"}, {"3651d", 0, "want whole days"}, {"87601h", 0, "allowed range"}, {"0d", 0, "allowed range"},
		{"7.5d", 0, "want whole days"}, {"-1d", 0, "want whole days"}, {"d", 0, "want whole days"}, {"week", 0, "want whole days"}, {"", 0, "want whole days"},
	} {
		got, err := ParseAge(c.age)
		if c.err == "" && (err != nil || got != c.want) {
			t.Errorf("%q: %v %v, want %v", c.age, got, err, c.want)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: %v %v, want an error saying %q", c.age, got, err, c.err)
		}
	}
	if _, err := Load(writeConfig(t, `{"streams":{"transcripts":{"maxAge":"10m"}}}`), t.TempDir()); err == nil ||
		!strings.Contains(err.Error(), `streams.transcripts.maxAge is "10m": allowed range 1h..3650d`) {
		t.Fatalf("a too short age: %v", err)
	}
	c2, err := Load(writeConfig(t, `{"streams":{"events":{"maxAge":"2d"},"dlq":{"maxAge":"12h"}}}`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if ev, tr, dlq := c2.Streams.MaxAges(); ev != 2*day || tr != 30*day || dlq != 12*time.Hour {
		t.Fatalf("set: %v %v %v", ev, tr, dlq)
	}
}

// FuzzParseAge: an accepted age is within the bounds, and written back
// as hours it reads the same.
func FuzzParseAge(f *testing.F) {
	for _, s := range []string{"7d", "36h", "1h30m", "3650d", "0d", "-5h", "9999999999999d", "1e3h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseAge(s)
		if err != nil {
			return
		}
		if d < MinStreamAge || d > MaxStreamAge {
			t.Fatalf("%q gave %v, out of bounds", s, d)
		}
		if again, err := ParseAge(d.String()); err != nil || again != d {
			t.Fatalf("%q gave %v, which reads back as %v %v", s, d, again, err)
		}
	})
}
