package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	for index, want := range map[string]vecindex.Options{
		"exact":       {Mode: vecindex.Exact},
		"approximate": {Mode: vecindex.IVF},
	} {
		c, err := Load(writeConfig(t, `{"store":{"index":"`+index+`"}}`), t.TempDir())
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
	} {
		if _, err := Load(writeConfig(t, body), t.TempDir()); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.Contains(err.Error(), "config") && !strings.Contains(err.Error(), "store.index") {
			t.Errorf("%s: error %q does not say where", name, err)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json"), t.TempDir()); err == nil {
		t.Error("an explicit config file that does not exist gave no error")
	}
}
