package memlog_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/memlog"
)

// lateKV writes every update but, while late is set, loses the replies
// of the updates: what a busy server does when it answers after the
// renewal's deadline.
type lateKV struct {
	jetstream.KeyValue
	late    atomic.Bool
	updates atomic.Int64
	onTime  atomic.Int64
}

func (k *lateKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	k.updates.Add(1)
	next, err := k.KeyValue.Update(context.WithoutCancel(ctx), key, value, rev)
	if err == nil && k.late.Load() {
		return 0, context.DeadlineExceeded
	}
	if err == nil {
		k.onTime.Add(1)
	}
	return next, err
}

// A renewal that was written though its reply came late leaves the lease
// with its holder, renewed from that revision on; a revision written by
// another holder loses it.
func TestLeaseKeepsItsOwnLateRenewal(t *testing.T) {
	const ttl = 1200 * time.Millisecond
	tests := []struct {
		name  string
		other bool // another holder writes the lease meanwhile
		lost  bool
	}{
		{name: "own late renewal", lost: false},
		{name: "taken by another", other: true, lost: true},
	}
	_, _, js := natsembed.StartTest(t)
	ctx := context.Background()
	kv := leasesBucket(ctx, t, js, ttl)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			late := &lateKV{KeyValue: kv}
			key := schemas.LeaseKey(i)
			l := memlog.NewLease(late, key, "writer-a", ttl)
			if ok, _, err := l.TryAcquire(ctx); !ok || err != nil {
				t.Fatalf("acquire: %v %v", ok, err)
			}
			kctx, cancel := context.WithCancel(ctx)
			defer cancel()
			kept := make(chan error, 1)
			go func() { kept <- l.Keep(kctx) }()
			late.late.Store(true)
			for tt.other {
				// Keep renews meanwhile: read and write again until the
				// other holder's write lands.
				e, err := kv.Get(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := kv.Update(ctx, key, []byte(`{"v":1,"holder":"writer-b"}`), e.Revision()); err == nil {
					break
				}
			}
			// Two renewals written late, then on time again.
			late.onTime.Store(0)
			var ended error
			for wait := time.Now().Add(3 * ttl); ended == nil && time.Now().Before(wait); {
				if late.updates.Load() >= 3 {
					late.late.Store(false)
				}
				select {
				case err := <-kept:
					ended = fmt.Errorf("Keep ended: %w", err)
				case <-time.After(10 * time.Millisecond):
				}
			}
			if ended != nil {
				if !tt.lost || !errors.Is(ended, memlog.ErrLeaseLost) {
					t.Fatal(ended)
				}
				return
			}
			if tt.lost {
				t.Fatal("the lease is kept though another holder wrote it")
			}
			if !l.Held() {
				t.Fatal("the lease is not held after its late renewals")
			}
			if late.onTime.Load() == 0 {
				t.Fatal("the lease was not renewed after the late replies")
			}
		})
	}
}
