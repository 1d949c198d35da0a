package lessons

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/work"
)

// A session id does not name one conversation: OpenClaw (2026.9) keeps the
// same id across /new and /reset, and each of those ends a *range* of it.
// The distill worker therefore remembers, per session, where it stopped —
// the fingerprints of the last messages it distilled (a sessionMark) — and
// each session-end event distils only the messages after that point. An
// event whose messages are all behind the mark (a redelivery, or the second
// of command:new and before_reset for one /new) distils nothing.

// markTail is how many trailing messages a mark remembers: one message
// ("ok") can repeat; three in a row seldom do.
const markTail = 3

// sessionMark is a session's progress and lock in the distill bucket.
type sessionMark struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
	// Tail holds the fingerprints of the last markTail messages distilled.
	Tail []string `json:"tail,omitempty"`
	// Ranges and Messages count what was distilled so far.
	Ranges   int `json:"ranges"`
	Messages int `json:"messages"`
	// Busy is set while a worker distils a range of the session; a busy
	// mark older than the worker's StaleAfter belongs to a dead worker.
	Busy    bool      `json:"busy,omitempty"`
	Updated time.Time `json:"updated"`
}

func markKey(agent, session string) string {
	return "mark." + agent + "." + schemas.SubjectToken(session)
}

// msgFingerprint identifies a message by role and text (whitespace
// folded): the same message read inline from a hook, from the transcript
// stream or from a file gets the same fingerprint.
func msgFingerprint(m distill.Message) string {
	return work.Fingerprint(m.Role, strings.Join(strings.Fields(m.Text), " "))
}

// tailOf returns the fingerprints of msgs' last markTail messages.
func tailOf(msgs []distill.Message) []string {
	start := max(0, len(msgs)-markTail)
	out := make([]string, 0, len(msgs)-start)
	for _, m := range msgs[start:] {
		out = append(out, msgFingerprint(m))
	}
	return out
}

// markEnd returns the index just past the last place in msgs where tail
// occurs (the end of what was distilled), or -1 when it does not occur.
func markEnd(msgs []distill.Message, tail []string) int {
	if len(tail) == 0 || len(msgs) < len(tail) {
		return -1
	}
	fps := make([]string, len(msgs))
	for i, m := range msgs {
		fps[i] = msgFingerprint(m)
	}
	for end := len(msgs); end >= len(tail); end-- {
		match := true
		for j := range tail {
			if fps[end-len(tail)+j] != tail[j] {
				match = false
				break
			}
		}
		if match {
			return end
		}
	}
	return -1
}

// sinceMark returns the messages after the mark: all of them when the mark
// is not among them (a new window of the session, as OpenClaw's hooks
// carry after a /new), none when the mark is their last message.
func sinceMark(msgs []distill.Message, tail []string) []distill.Message {
	if end := markEnd(msgs, tail); end >= 0 {
		return msgs[end:]
	}
	return msgs
}

// rangeID names a range by its first and last message and its length, so
// the same range found again (a retry after a crash) gets the same id.
func rangeID(msgs []distill.Message) string {
	h := sha256.New()
	h.Write([]byte(msgFingerprint(msgs[0])))
	h.Write([]byte(msgFingerprint(msgs[len(msgs)-1])))
	fmt.Fprintf(h, "%d", len(msgs))
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// lockSession takes a session's mark for this worker with compare-and-set.
// A fresh busy mark of another worker is errBusy.
func lockSession(ctx context.Context, kv jetstream.KeyValue, agent, session string, staleAfter time.Duration) (sessionMark, uint64, error) {
	key := markKey(agent, session)
	for range 5 {
		e, err := kv.Get(ctx, key)
		var mark sessionMark
		var rev uint64
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			mark = sessionMark{Agent: agent, Session: session}
		case err != nil:
			return mark, 0, fmt.Errorf("read session mark: %w", err)
		default:
			rev = e.Revision()
			if err := json.Unmarshal(e.Value(), &mark); err != nil {
				// A mark we cannot read is rebuilt: at worst a range is
				// distilled again, which stores nothing twice.
				mark = sessionMark{Agent: agent, Session: session}
			}
			if mark.Busy && time.Since(mark.Updated) < staleAfter {
				return mark, 0, errBusy
			}
		}
		mark.Busy = true
		newRev, err := putMark(ctx, kv, &mark, rev)
		if errors.Is(err, jetstream.ErrKeyExists) || isWrongRevision(err) {
			continue
		}
		return mark, newRev, err
	}
	return sessionMark{}, 0, errBusy
}

// putMark writes mark: created when rev is 0, else only over revision rev.
func putMark(ctx context.Context, kv jetstream.KeyValue, mark *sessionMark, rev uint64) (uint64, error) {
	mark.Updated = time.Now().UTC()
	b, err := json.Marshal(mark)
	if err != nil {
		return 0, err
	}
	if rev == 0 {
		return kv.Create(ctx, markKey(mark.Agent, mark.Session), b)
	}
	return kv.Update(ctx, markKey(mark.Agent, mark.Session), b, rev)
}

// readMark returns a session's mark without taking it (zero when none).
func readMark(ctx context.Context, kv jetstream.KeyValue, agent, session string) sessionMark {
	var mark sessionMark
	if e, err := kv.Get(ctx, markKey(agent, session)); err == nil {
		_ = json.Unmarshal(e.Value(), &mark)
	}
	return mark
}

// isWrongRevision reports a compare-and-set that lost to another write.
func isWrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}
