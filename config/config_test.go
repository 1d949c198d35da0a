package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
