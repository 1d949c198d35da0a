package embed

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine/envsubst"
)

func TestRemoteAPIKeyFallsBackToOpenAIEnv(t *testing.T) {
	f := newFakeAPI(t, testDims)
	t.Setenv("OPENAI_API_KEY", "sk-from-openai-env")
	e := newTestRemote(t, Config{BaseURL: f.baseURL(), Model: testModel})
	if _, err := e.EmbedQuery(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[0].Auth; got != "Bearer sk-from-openai-env" {
		t.Fatalf("Authorization = %q", got)
	}
}

func TestRemoteWithoutKeyForCustomEndpoint(t *testing.T) {
	f := newFakeAPI(t, testDims)
	t.Setenv("OPENAI_API_KEY", "")
	e := newTestRemote(t, Config{Provider: "openai", BaseURL: f.baseURL(), Model: testModel})
	if _, err := e.EmbedQuery(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[0].Auth; got != "" {
		t.Fatalf("Authorization = %q, want none for a keyless local server", got)
	}
}

func TestNewRemoteConfigErrors(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("CLAWMEM_TEST_UNSET", "")
	tests := []struct {
		name string
		cfg  Config
		want []string
		is   error
	}{
		{
			name: "unknown model",
			cfg:  Config{APIKey: "k", Model: "my-custom-embedder"},
			want: []string{`"my-custom-embedder"`, "set embedding.dimensions"},
		},
		{
			name: "unset key variable",
			cfg:  Config{APIKey: "${CLAWMEM_TEST_UNSET}"},
			want: []string{"apiKey", "environment variable CLAWMEM_TEST_UNSET is not set"},
			is:   envsubst.ErrUnset,
		},
		{
			name: "unset URL variable",
			cfg:  Config{APIKey: "k", BaseURL: "http://${CLAWMEM_TEST_UNSET}/v1"},
			want: []string{"baseURL", "CLAWMEM_TEST_UNSET"},
			is:   envsubst.ErrUnset,
		},
		{
			name: "no key for OpenAI",
			cfg:  Config{Provider: "openai"},
			want: []string{"no API key", "OPENAI_API_KEY"},
		},
		{
			name: "URL without scheme",
			cfg:  Config{APIKey: "k", BaseURL: "localhost:11434/v1"},
			want: []string{"http(s) URL"},
		},
		{
			name: "unknown provider",
			cfg:  Config{Provider: "cohere"},
			want: []string{`unknown provider "cohere"`},
		},
		{
			name: "negative dimensions",
			cfg:  Config{APIKey: "k", Dimensions: -1},
			want: []string{"embedding.dimensions must not be negative"},
		},
		{
			name: "negative timeout",
			cfg:  Config{APIKey: "k", Timeout: -time.Second},
			want: []string{"timeout"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(tt.cfg)
			if err == nil {
				t.Fatalf("New succeeded with %T", e)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
		})
	}
}

func TestNewRemoteDefaults(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-x")
	e := newTestRemote(t, Config{Provider: "OpenAI"})
	if e.Model() != "text-embedding-3-small" || e.Dimensions() != 1536 {
		t.Fatalf("defaults: model %q dims %d", e.Model(), e.Dimensions())
	}
	r := e.(*remote)
	if r.cfg.baseURL != defaultBaseURL || r.cfg.timeout != 30*time.Second || r.cfg.batchSize != 64 ||
		r.cfg.cacheSize != 256 || r.cfg.cacheTTL != 30*time.Minute || r.cfg.sendDims {
		t.Fatalf("defaults: %+v", r.cfg)
	}
	// An API key alone selects the openai provider.
	if _, ok := newTestRemote(t, Config{APIKey: "k"}).(*remote); !ok {
		t.Fatal("APIKey without provider did not select openai")
	}
	// Configured dimensions override the table.
	if got := newTestRemote(t, Config{APIKey: "k", Model: "text-embedding-3-large", Dimensions: 1024}).Dimensions(); got != 1024 {
		t.Fatalf("Dimensions = %d, want 1024", got)
	}
}

func TestKnownDimensions(t *testing.T) {
	want := map[string]int{
		"text-embedding-3-small":        1536,
		"text-embedding-3-large":        3072,
		"text-embedding-004":            768,
		"gemini-embedding-001":          3072,
		"nomic-embed-text":              768,
		"mxbai-embed-large":             1024,
		"BAAI/bge-m3":                   1024,
		"all-MiniLM-L6-v2":              384,
		"all-mpnet-base-v2":             768,
		"jina-embeddings-v5-text-small": 1024,
		"jina-embeddings-v5-text-nano":  768,
	}
	for model, dims := range want {
		if got, ok := KnownDimensions(model); !ok || got != dims {
			t.Errorf("KnownDimensions(%q) = %d, %v; want %d", model, got, ok, dims)
		}
	}
	if len(knownDimensions) != len(want) {
		t.Errorf("table has %d models, want exactly %d", len(knownDimensions), len(want))
	}
	if _, ok := KnownDimensions("text-embedding-ada-002"); ok {
		t.Error("unexpected entry for text-embedding-ada-002")
	}
}
