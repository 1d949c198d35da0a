package query

// Forgetting reaches the streams: a forgotten memory's text is deleted
// from the messages it was captured from (see package purge).

import (
	"context"
	"fmt"
	"strings"

	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/purge"
)

// erasure is what erase did: messages deleted, and what it left and why.
type erasure struct {
	purged int
	note   string
}

// erase securely deletes the events, transcript entries and dead letters
// of the forgotten memories' agents that hold their texts. It runs after
// the memories are gone from the store, whose deletion stands whatever
// happens here: a failure is said in the note.
func (s *Service) erase(ctx context.Context, ms []schemas.Memory) erasure {
	var traced []schemas.Memory
	for _, m := range ms {
		if hasSession(m) {
			traced = append(traced, m)
		}
	}
	untraced := len(ms) - len(traced)
	if len(traced) == 0 {
		if untraced == 0 {
			return erasure{}
		}
		return erasure{note: notFromConversation(untraced)}
	}
	if s.purger == nil {
		return erasure{note: "this process opened the store directly, without NATS, so the stream messages holding the text " +
			"were not searched and stay until they age out; a forget through a running clawmem (without --db) deletes them too"}
	}
	agents, err := s.purger.Agents(ctx)
	if err != nil {
		return erasure{note: fmt.Sprintf("the stream messages holding the text were not searched: %v", err)}
	}
	texts := map[string][]string{}
	reworded := 0
	for _, m := range traced {
		src, ok := purge.Trace(m, agents)
		if !ok {
			untraced++
			continue
		}
		if !src.Verbatim {
			reworded++
		}
		texts[src.Agent] = append(texts[src.Agent], m.Text)
	}
	var e erasure
	var notes []string
	for agent, ts := range texts {
		n, err := s.purger.Purge(ctx, agent, ts)
		e.purged += n
		if err != nil {
			notes = append(notes, fmt.Sprintf("purging agent %s's messages stopped: %v", agent, err))
		}
	}
	if untraced > 0 {
		notes = append(notes, notFromConversation(untraced))
	}
	if reworded > 0 {
		notes = append(notes, fmt.Sprintf("%d %s written by the LLM (extracted or distilled): the messages holding that exact text "+
			"were deleted, the ones it was derived from say it in other words and stay until the streams' max age", reworded, plural(reworded, "memory was", "memories were")))
	}
	e.note = strings.Join(notes, "; ")
	return e
}

func notFromConversation(n int) string {
	return fmt.Sprintf("%d %s no conversation in the streams (stored by a tool, imported, merged, or its messages "+
		"have aged out): no stream message was deleted for %s", n, plural(n, "memory comes from", "memories come from"), plural(n, "it", "them"))
}

// hasSession reports whether m's metadata names the session it was
// derived in: only such a memory can be traced to its messages.
func hasSession(m schemas.Memory) bool {
	md := string(m.Metadata)
	return strings.Contains(md, `"sessionKey"`) || strings.Contains(md, `"sessionId"`)
}

// purgedText says what erase did, for a reply's text.
func (e erasure) text() string {
	var b strings.Builder
	if e.purged > 0 {
		fmt.Fprintf(&b, " %d stream %s holding the forgotten text deleted.", e.purged, plural(e.purged, "message", "messages"))
	}
	if e.note != "" {
		fmt.Fprintf(&b, " Note: %s.", e.note)
	}
	return b.String()
}
