package jsbound

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A JetStream whose replies never come (a responder that swallows the
// requests, as a reply lost in a reconnect looks): the caller's context
// runs for a minute, yet each bounded call fails within its bound.
func TestCallsFailWithinTheirBound(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server did not start")
	}
	defer s.Shutdown()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Subscribe("$JS.API.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe("chaos.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	raw, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	js := Wrap(raw, 200*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, call := range map[string]func() error{
		"publish": func() error { _, err := js.Publish(ctx, "chaos.x", []byte("x")); return err },
		"publish msg": func() error {
			_, err := js.PublishMsg(ctx, &nats.Msg{Subject: "chaos.x", Data: []byte("x")})
			return err
		},
		"kv": func() error { _, err := js.KeyValue(ctx, "b"); return err },
	} {
		start := time.Now()
		if err := call(); err == nil {
			t.Errorf("%s: no error without a reply", name)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("%s: took %s with a 200 ms bound", name, el)
		}
	}
	if Wrap(js, time.Second) != js {
		t.Error("Wrap of a wrapped JetStream wraps it again")
	}
}

// blockingKV answers nothing until the caller gives up.
type blockingKV struct{ jetstream.KeyValue }

func (blockingKV) Get(ctx context.Context, _ string) (jetstream.KeyValueEntry, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (blockingKV) Put(ctx context.Context, _ string, _ []byte) (uint64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func (blockingKV) PutString(ctx context.Context, _, _ string) (uint64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func (blockingKV) Create(ctx context.Context, _ string, _ []byte, _ ...jetstream.KVCreateOpt) (uint64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func (blockingKV) Update(ctx context.Context, _ string, _ []byte, _ uint64) (uint64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func (blockingKV) Delete(ctx context.Context, _ string, _ ...jetstream.KVDeleteOpt) error {
	<-ctx.Done()
	return ctx.Err()
}

// Each KV call of a bucket handed out by Wrap is bounded the same way.
func TestKVCallsFailWithinTheirBound(t *testing.T) {
	kv := boundedKV{KeyValue: blockingKV{}, d: 100 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, call := range map[string]func() error{
		"get":        func() error { _, err := kv.Get(ctx, "k"); return err },
		"put":        func() error { _, err := kv.Put(ctx, "k", nil); return err },
		"put string": func() error { _, err := kv.PutString(ctx, "k", "v"); return err },
		"create":     func() error { _, err := kv.Create(ctx, "k", nil); return err },
		"update":     func() error { _, err := kv.Update(ctx, "k", nil, 1); return err },
		"delete":     func() error { return kv.Delete(ctx, "k") },
	} {
		start := time.Now()
		if err := call(); err == nil {
			t.Errorf("%s: no error", name)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("%s: took %s with a 100 ms bound", name, el)
		}
	}
}
