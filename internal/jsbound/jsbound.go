// Package jsbound bounds each JetStream request a worker makes. nats.go
// waits for a request's reply until the caller's context ends, and a
// reply lost while the connection was re-established (a restart of the
// server) is never coming: a stage whose batch context runs for minutes
// stalled that long on one lost KV read. Wrap gives every publish and KV
// call its own deadline, so a lost reply is an error the stage retries.
package jsbound

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Timeout is the default bound on one request.
const Timeout = 10 * time.Second

// Wrap bounds js's publishes and KV calls (and those of the KV buckets it
// hands out) by d each; a shorter deadline of the caller's still holds.
func Wrap(js jetstream.JetStream, d time.Duration) jetstream.JetStream {
	if _, ok := js.(bounded); ok {
		return js
	}
	return bounded{JetStream: js, d: d}
}

type bounded struct {
	jetstream.JetStream
	d time.Duration
}

func (b bounded) Publish(ctx context.Context, subject string, data []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	return b.JetStream.Publish(ctx, subject, data, opts...)
}

func (b bounded) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	return b.JetStream.PublishMsg(ctx, m, opts...)
}

func (b bounded) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	kv, err := b.JetStream.KeyValue(ctx, bucket)
	if err != nil {
		return nil, err
	}
	return boundedKV{KeyValue: kv, d: b.d}, nil
}

type boundedKV struct {
	jetstream.KeyValue
	d time.Duration
}

func (b boundedKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	return b.KeyValue.Get(ctx, key)
}

func (b boundedKV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	return b.KeyValue.Put(ctx, key, value)
}

func (b boundedKV) PutString(ctx context.Context, key, value string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	return b.KeyValue.PutString(ctx, key, value)
}

func (b boundedKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	return b.KeyValue.Create(ctx, key, value, opts...)
}

func (b boundedKV) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	return b.KeyValue.Update(ctx, key, value, revision)
}

func (b boundedKV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	return b.KeyValue.Delete(ctx, key, opts...)
}
