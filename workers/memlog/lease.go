package memlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrLeaseLost is returned by Keep when another writer holds the lease:
// this one must stop writing at once.
var ErrLeaseLost = errors.New("the writer's lease is lost")

// leaseVersion is the lease value's format; a lease of another format is
// left to expire, never overwritten.
const leaseVersion = 1

// leaseValue is what the lease key holds.
type leaseValue struct {
	V      int       `json:"v"`
	Holder string    `json:"holder"`
	Since  time.Time `json:"since"`
}

// Lease is a writer's lease in a KV bucket whose TTL expires it: created
// when free (or held by this holder's earlier life), renewed by revision
// compare-and-set, so two holders never both renew it.
type Lease struct {
	kv     jetstream.KeyValue
	key    string
	holder string
	ttl    time.Duration

	mu      sync.Mutex
	rev     uint64
	renewed time.Time
}

// NewLease is holder's lease on key in kv, whose TTL is ttl.
func NewLease(kv jetstream.KeyValue, key, holder string, ttl time.Duration) *Lease {
	return &Lease{kv: kv, key: key, holder: holder, ttl: ttl}
}

// TryAcquire takes the lease if it is free, or held by this holder (a
// restart within the TTL); it reports who holds it otherwise.
func (l *Lease) TryAcquire(ctx context.Context) (ok bool, heldBy string, err error) {
	val, _ := json.Marshal(leaseValue{V: leaseVersion, Holder: l.holder, Since: time.Now().UTC()})
	start := time.Now()
	rev, err := l.kv.Create(ctx, l.key, val)
	if errors.Is(err, jetstream.ErrKeyExists) {
		e, gerr := l.kv.Get(ctx, l.key)
		if gerr != nil {
			return false, "", gerr
		}
		var cur leaseValue
		if json.Unmarshal(e.Value(), &cur) != nil || cur.V != leaseVersion {
			return false, "", fmt.Errorf("the writer's lease holds %q, not a lease this clawmem reads: it expires in %s if no one renews it", e.Value(), l.ttl)
		}
		if cur.Holder != l.holder {
			return false, cur.Holder, nil
		}
		rev, err = l.kv.Update(ctx, l.key, val, e.Revision())
	}
	if err != nil {
		return false, "", err
	}
	l.mu.Lock()
	l.rev, l.renewed = rev, start
	l.mu.Unlock()
	return true, l.holder, nil
}

// Held reports whether the lease is surely still this holder's: renewed
// less than two thirds of the TTL ago, leaving a margin before it could
// expire.
func (l *Lease) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.renewed.IsZero() && time.Since(l.renewed) < l.ttl*2/3
}

// Keep renews the lease every sixth of the TTL until ctx ends (nil) or the
// lease is lost (ErrLeaseLost). A renewal that fails (a busy cluster)
// is tried again at the next tick: the lease is given up only when it may
// have expired, or someone else holds it.
func (l *Lease) Keep(ctx context.Context) error {
	t := time.NewTicker(l.ttl / 6)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		l.mu.Lock()
		rev := l.rev
		l.mu.Unlock()
		val, _ := json.Marshal(leaseValue{V: leaseVersion, Holder: l.holder, Since: time.Now().UTC()})
		start := time.Now()
		// A busy server answers late: a renewal may take until the next
		// but one tick, well within the margin Held leaves.
		rctx, cancel := context.WithTimeout(ctx, l.ttl/3)
		next, err := l.kv.Update(rctx, l.key, val, rev)
		cancel()
		switch {
		case err == nil:
			l.mu.Lock()
			l.rev, l.renewed = next, start
			l.mu.Unlock()
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, jetstream.ErrKeyExists) && l.ownRenewal(ctx):
			// An earlier renewal was written though its reply came too late.
		case errors.Is(err, jetstream.ErrKeyExists) || !l.Held():
			// Another revision is there (someone took the lease), or it
			// could not be renewed before it may have expired.
			return fmt.Errorf("%w: %v", ErrLeaseLost, err)
		}
	}
}

// ownRenewal reports whether the lease's newer revision is this holder's
// own renewal, one whose reply was lost or came after its deadline (a busy
// server), and if so goes on from that revision. Renewed is then taken as
// that renewal's start, which it cannot have preceded. Only this holder
// writes its name in the lease, so no one else has it.
func (l *Lease) ownRenewal(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, l.ttl/3)
	e, err := l.kv.Get(rctx, l.key)
	cancel()
	if err != nil {
		return false
	}
	var cur leaseValue
	if json.Unmarshal(e.Value(), &cur) != nil || cur.V != leaseVersion || cur.Holder != l.holder {
		return false
	}
	l.mu.Lock()
	l.rev = e.Revision()
	if cur.Since.After(l.renewed) {
		l.renewed = cur.Since
	}
	l.mu.Unlock()
	return l.Held()
}

// Release gives the lease up, if this holder still holds it, so that a
// standby takes over at once instead of after the TTL.
func (l *Lease) Release(ctx context.Context) {
	l.mu.Lock()
	rev := l.rev
	l.mu.Unlock()
	_ = l.kv.Delete(ctx, l.key, jetstream.LastRevision(rev))
}
