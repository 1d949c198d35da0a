// Package pipelinetest runs the capture and store stages on an embedded
// NATS server over a real store, for the tests of the stages that feed or
// follow them: capture, the store worker and distillation. It sits apart
// from testkit because it imports those stages, whose own tests import
// testkit.
package pipelinetest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/capture"
	"github.com/clawmem/clawmem/workers/stage"
	"github.com/clawmem/clawmem/workers/store"
)

// Dims is the size of the local embedder of the pipeline's store.
const Dims = 256

// Envelope is the untrusted metadata OpenClaw puts before a channel
// message, which capture strips.
const Envelope = "Conversation info (untrusted metadata):\n```json\n{\"message_id\":\"1234\",\"sender\":\"alice\",\"channel\":\"telegram\"}\n```\n\n[Telegram Alice +5m] "

// Pipeline is an embedded server with its streams and a real store.
type Pipeline struct {
	JS  jetstream.JetStream
	NC  *nats.Conn
	Eng *memory.Engine
}

// Start runs capture and store workers on an embedded server until the
// test ends. captureEmb is the capture stage's embedder (nil: the
// engine's, the local embedder of Dims dimensions).
func Start(t testing.TB, captureEmb embed.Embedder, stageCfg stage.Config) *Pipeline {
	t.Helper()
	_, nc, js := natsembed.StartTest(t)
	if err := topology.Ensure(context.Background(), js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	eng, _ := testkit.Engine(t, "", testkit.LocalEmbedder(t, Dims))
	if captureEmb == nil {
		captureEmb = eng.Embedder()
	}
	log := slog.New(slog.DiscardHandler)
	m := stage.NewMetrics(nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	cw := capture.New(js, captureEmb, capture.Config{Stage: stageCfg}, m, log)
	sw := store.New(js, eng, stageCfg, m, nil, log)
	wg.Go(func() {
		if err := cw.Run(ctx); err != nil {
			t.Error(err)
		}
	})
	wg.Go(func() {
		if err := sw.Run(ctx); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return &Pipeline{JS: js, NC: nc, Eng: eng}
}

// PublishAgentEnd publishes a successful agent_end of session with msgs,
// with msgID as its Msg-Id unless empty.
func (p *Pipeline) PublishAgentEnd(t testing.TB, agent, session string, msgs []schemas.Message, msgID string) {
	t.Helper()
	ev, _ := json.Marshal(schemas.AgentEndEvent{Messages: msgs, Success: true})
	body, _ := json.Marshal(schemas.HookEvent{V: schemas.Version, Kind: schemas.KindAgentEnd, SessionKey: session, Timestamp: time.Now().UnixMilli(), Event: ev})
	opts := []jetstream.PublishOpt{}
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	if _, err := p.JS.Publish(context.Background(), schemas.EventSubject(schemas.KindAgentEnd, agent), body, opts...); err != nil {
		t.Fatal(err)
	}
}

// Texts is the store's current memories by text; a text stored twice
// fails the test.
func (p *Pipeline) Texts(t testing.TB) map[string]schemas.Memory {
	t.Helper()
	ms, err := p.Eng.List(context.Background(), memory.Admin(), memory.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]schemas.Memory{}
	for _, m := range ms {
		if _, dup := out[m.Text]; dup {
			t.Fatalf("memory stored twice: %q", m.Text)
		}
		out[m.Text] = m
	}
	return out
}

// WaitDLQ waits until the DLQ holds exactly n messages.
func (p *Pipeline) WaitDLQ(t testing.TB, n uint64) {
	t.Helper()
	testkit.WaitFor(t, 15*time.Second, func() error {
		s, err := p.JS.Stream(context.Background(), schemas.StreamDLQ)
		if err != nil {
			return err
		}
		info, err := s.Info(context.Background())
		if err != nil {
			return err
		}
		if info.State.Msgs != n {
			return fmt.Errorf("%d dead letters, want %d", info.State.Msgs, n)
		}
		return nil
	})
}
