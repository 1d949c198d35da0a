package client

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/schemas"
)

// Status text names each writer with its partitions in ranges, and says
// when none holds a partition.
func TestStatusText(t *testing.T) {
	st := Status{Writers: []Writer{{ID: "w1", Partitions: []int{0, 1, 2, 3, 5, 7, 8}}, {ID: "w2", Partitions: []int{4}}},
		LogSeq: 9, Instances: []Instance{{ID: "q1", Role: "replica", LogSeq: 9}}}
	var b bytes.Buffer
	if err := st.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"w1 holds partitions 0-3, 5, 7-8", "w2 holds partition 4", "q1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := (Status{}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "none holds a partition") {
		t.Errorf("no writers:\n%s", b.String())
	}
}

// A consumer whose messages wait with none acknowledged for longer than
// twice its ack wait is stalled, and the status says so; one that acks,
// or has nothing waiting, is not. The server's own last-ack time is what
// counts: a message kept in progress is still stalled.
func TestStatusShowsAStalledStage(t *testing.T) {
	_, _, js := natsembed.StartTest(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: schemas.StreamWork, Subjects: []string{"w.>"}}); err != nil {
		t.Fatal(err)
	}
	const ackWait = 200 * time.Millisecond
	tests := []struct {
		name    string
		publish int
		ack     int // of the messages fetched, how many are acked
		stalled bool
	}{
		{name: "stuck", publish: 3, ack: 1, stalled: true},
		{name: "done", publish: 2, ack: 2},
		{name: "idle", publish: 0},
	}
	for _, tt := range tests {
		subject := "w." + tt.name
		c, err := js.CreateOrUpdateConsumer(ctx, schemas.StreamWork, jetstream.ConsumerConfig{Durable: tt.name,
			FilterSubject: subject, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxDeliver: -1})
		if err != nil {
			t.Fatal(err)
		}
		for range tt.publish {
			if _, err := js.Publish(ctx, subject, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		if tt.publish > 0 {
			batch, err := c.Fetch(tt.publish, jetstream.FetchMaxWait(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			for m := range batch.Messages() {
				if i < tt.ack {
					if err := m.DoubleAck(ctx); err != nil {
						t.Fatal(err)
					}
				} else {
					_ = m.InProgress()
				}
				i++
			}
		}
	}
	time.Sleep(3 * ackWait)
	got, err := consumers(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	st := Status{Consumers: got}
	var b bytes.Buffer
	if err := st.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		line := "stage " + tt.name + " (" + schemas.StreamWork + "):"
		if strings.Contains(b.String(), line) != tt.stalled {
			t.Errorf("%s: stalled %v, want %v:\n%s", tt.name, !tt.stalled, tt.stalled, b.String())
		}
	}
	if !strings.Contains(b.String(), "2 messages wait, none acknowledged for") {
		t.Errorf("the stalled line does not say how much waits:\n%s", b.String())
	}
}
