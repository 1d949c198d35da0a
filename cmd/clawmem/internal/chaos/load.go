package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
)

// Load publishes N distinct capturable agent_end events to a hook ingest
// at a steady rate. An event is retried until the ingest acknowledges it
// (202) or the load's context ends; each is acknowledged at most once
// here, and the Msg-Id the ingest derives from the session and run makes
// a retry after an unseen acknowledgement safe.
type Load struct {
	URL   string
	Token string // the ingest's bearer token
	N     int
	Rate  float64 // events per second
	Agent string  // default main
	// Pad, when > 0, adds an assistant message of that many bytes to each
	// event (not captured: it only makes the events bigger).
	Pad int

	texts   []string
	acked   []atomic.Bool
	nAcked  atomic.Int64
	refused atomic.Int64 // answers other than 202 (503 while full, ...)
	failed  atomic.Int64 // no answer (process down)
	codes   sync.Map     // status -> *atomic.Int64
}

// textIndex finds an event's index in a stored memory's text.
var textIndex = regexp.MustCompile(`item (\d+):`)

// Ingest is a hook ingest to post to: its base URL and bearer token.
type Ingest struct{ URL, Token string }

// NewLoad makes the events' texts; seed fixes them.
func NewLoad(in Ingest, n int, rate float64, seed uint64) *Load {
	return NewPooledLoad(in, n, n, rate, seed)
}

// NewPooledLoad is a load of n events whose texts cycle through pool
// distinct ones: after the first round every event is a duplicate of a
// stored memory, so the store stops growing (a soak's steady state) while
// every stage still does its work. The sessions cycle too: event i is a
// turn of session i mod pool, run i / pool (so its Msg-Id is new), and
// each round gives a session the text after its last one, so capture reads
// it as new (the session's last message changed) and the store finds it
// a duplicate. What clawmem keeps per session (a capture cursor) then
// stays as many as the sessions, as it would for an agent's real ones. With
// pool = n, every event is its own session with its own text.
func NewPooledLoad(in Ingest, n, pool int, rate float64, seed uint64) *Load {
	pool = max(1, min(pool, n))
	rng := rand.New(rand.NewPCG(seed, 19))
	l := &Load{URL: in.URL, Token: in.Token, N: n, Rate: rate, Agent: "main", texts: make([]string, pool), acked: make([]atomic.Bool, pool)}
	for i := range l.texts {
		l.texts[i] = "Remember that " + testkit.Sentence(rng, i)
	}
	return l
}

// Text is a text for a query: the i-th of those acknowledged so far (in
// a cycle), the first before any is.
func (l *Load) Text(i int) string {
	return l.texts[i%min(len(l.texts), max(1, l.Acked()))]
}

// Acked is the number of events acknowledged so far (each is posted until
// it is acknowledged, then never again).
func (l *Load) Acked() int { return int(l.nAcked.Load()) }

// Run publishes every event, each at its turn of the rate, retrying what
// fails every 200 ms; it returns when all are acknowledged or ctx ends.
func (l *Load) Run(ctx context.Context) {
	hc := &http.Client{Timeout: 10 * time.Second}
	interval := time.Duration(float64(time.Second) / l.Rate)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	start := time.Now()
	for i := range l.N {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			select {
			case <-ctx.Done():
				wg.Wait()
				return
			case <-time.After(d):
			}
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			for ctx.Err() == nil {
				if l.post(ctx, hc, i) {
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
		})
	}
	wg.Wait()
}

// turn is event i's text (an index into texts), session and run.
func (l *Load) turn(i int) (text int, session, run string) {
	pool := len(l.texts)
	s, round := i%pool, i/pool
	return (s + round) % pool, "chaos-" + strconv.Itoa(s), "run-" + strconv.Itoa(round+1)
}

func (l *Load) post(ctx context.Context, hc *http.Client, i int) bool {
	text, session, run := l.turn(i)
	msgs := []map[string]any{{"role": "user", "content": l.texts[text]}}
	if l.Pad > 0 {
		msgs = append(msgs, map[string]any{"role": "assistant", "content": string(bytes.Repeat([]byte("z"), l.Pad))})
	}
	body, _ := json.Marshal(map[string]any{
		"event": map[string]any{"success": true, "messages": msgs},
		"ctx":   map[string]any{"agentId": l.Agent, "sessionKey": session, "runId": run},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.URL+"/v1/hooks/agent_end", bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+l.Token)
	resp, err := hc.Do(req)
	if err != nil {
		l.failed.Add(1)
		return false
	}
	resp.Body.Close()
	c, _ := l.codes.LoadOrStore(resp.StatusCode, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	if resp.StatusCode != http.StatusAccepted {
		l.refused.Add(1)
		return false
	}
	l.acked[text].Store(true)
	l.nAcked.Add(1)
	return true
}

// Codes are the ingest's answers by HTTP status.
func (l *Load) Codes() map[string]int64 {
	out := map[string]int64{}
	l.codes.Range(func(k, v any) bool {
		out[strconv.Itoa(k.(int))] = v.(*atomic.Int64).Load()
		return true
	})
	if n := l.failed.Load(); n > 0 {
		out["no answer"] = n
	}
	return out
}

// Tally is what became of a load's events in the store.
type Tally struct {
	Offered int `json:"offered"` // events
	Acked   int `json:"acked"`   // events
	// Texts is the distinct texts the events carry (fewer than the
	// events for a pooled load); the counts below are of texts.
	Texts  int `json:"texts"`
	Stored int `json:"stored"` // acknowledged texts found as memories
	Lost   int `json:"lost"`   // acknowledged, not stored
	Dup    int `json:"dup"`    // stored more than once (extra copies)
	// Unacked events may be stored too (acknowledged by the server but
	// the answer never reached us): counted, not a fault.
	StoredUnacked int `json:"storedUnacked,omitempty"`
	DLQ           int `json:"dlq"` // messages in the dead-letter stream
}

// Count reads the store through the running instance and tallies the
// load's events.
func (l *Load) Count(ctx context.Context, nc *nats.Conn) (Tally, error) {
	seen := make([]int, len(l.texts))
	err := client.NewNATSBulk(nc).Export(ctx, "", false, func(m schemas.Memory) error {
		sm := textIndex.FindStringSubmatch(m.Text)
		if sm == nil {
			return nil
		}
		i, err := strconv.Atoi(sm[1])
		if err == nil && i < len(l.texts) && m.Text == l.texts[i] {
			seen[i]++
		}
		return nil
	})
	if err != nil {
		return Tally{Offered: l.N, Acked: l.Acked()}, err
	}
	return l.tally(seen), nil
}

// tally counts the events against seen, how often each is stored.
func (l *Load) tally(seen []int) Tally {
	t := Tally{Offered: l.N, Acked: l.Acked(), Texts: len(l.texts)}
	for i, n := range seen {
		acked := l.acked[i].Load()
		switch {
		case n == 0 && acked:
			t.Lost++
		case n > 0 && acked:
			t.Stored++
		case n > 0:
			t.StoredUnacked++
		}
		if n > 1 {
			t.Dup += n - 1
		}
	}
	return t
}

// Settle counts until every acknowledged event is stored, or nothing has
// changed for quiet, or ctx ends; it returns the last tally.
func (l *Load) Settle(ctx context.Context, nc *nats.Conn, quiet time.Duration) (Tally, error) {
	var last Tally
	changed := time.Now()
	for {
		t, err := l.Count(ctx, nc)
		if err == nil {
			if t != last {
				changed = time.Now()
			}
			last = t
			if t.Lost == 0 {
				return t, nil
			}
		}
		if time.Since(changed) > quiet {
			return last, err
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
