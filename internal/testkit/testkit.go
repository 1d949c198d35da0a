// Package testkit holds helpers shared by tests of several packages: a real
// engine on a temporary SQLite store, polling with a deadline, hook
// messages, fake model replies and distinct texts. Tests import it, and so
// do the harnesses under cmd/clawmem/internal for their texts and
// percentiles; nothing else does. Its subpackage pipelinetest runs the
// capture and store stages for the workers' tests.
package testkit

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/schemas"
)

// LocalEmbedder is the offline lexical embedder with dims dimensions.
func LocalEmbedder(t testing.TB, dims int) embed.Embedder {
	t.Helper()
	emb, err := embed.New(embed.Config{Provider: embed.ProviderLocal, Dimensions: dims})
	if err != nil {
		t.Fatal(err)
	}
	return emb
}

// Engine opens a real SQLite store in dir (a temporary one when empty)
// with emb, default retrieval and default scopes (an agent reads global and
// agent:<id>, and stores in agent:<id>). Its clock advances 1 ms per
// reading, so memories stored one after another list in a fixed order. The
// store closes at cleanup; the returned func closes it earlier.
func Engine(t testing.TB, dir string, emb embed.Embedder) (*memory.Engine, func()) {
	t.Helper()
	cfg := retrieve.DefaultConfig()
	cfg.AutoRecallMinScore, cfg.AutoRecallMinMargin = 0.3, 0 // the seed's gate, for the small test embedders the fixtures were written for
	return EngineWith(t, dir, emb, cfg)
}

// EngineWith is Engine with the retrieval configuration cfg.
func EngineWith(t testing.TB, dir string, emb embed.Embedder, cfg retrieve.Config) (*memory.Engine, func()) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Millisecond)
		return clock
	}
	st, err := sqlitestore.Open(context.Background(), dir, sqlitestore.Options{Dimensions: emb.Dimensions(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	closeStore := func() { once.Do(func() { st.Close() }) }
	t.Cleanup(closeStore)
	ret, err := retrieve.New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := scopes.New(scopes.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return memory.New(st, emb, ret, sm), closeStore
}

// WaitFor polls fn every 20 ms until it returns nil, failing the test with
// fn's last error once timeout has passed.
func WaitFor(t testing.TB, timeout time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// StreamMsgs is how many messages stream holds now.
func StreamMsgs(t testing.TB, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// UserMsg is a hook message the user said, its content a JSON string.
func UserMsg(text string) schemas.Message {
	c, _ := json.Marshal(text)
	return schemas.Message{Role: "user", Content: c}
}

// AssistantMsg is a hook message the assistant said, its content text
// blocks.
func AssistantMsg(text string) schemas.Message {
	c, _ := json.Marshal([]schemas.ContentBlock{{Type: "text", Text: text}})
	return schemas.Message{Role: "assistant", Content: c}
}
