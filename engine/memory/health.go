package memory

import (
	"context"
	"time"

	"github.com/clawmem/clawmem/engine"
)

// Health is what a memory host (OpenClaw's status, doctor and Memory page)
// shows of the memory service besides counts: whether queries are being
// embedded, when the newest memory the caller can read was made, and the
// index's kind, without the store-wide figures only operators see.
type Health struct {
	// EmbedderOK is false while the embedder's last query failed and
	// recall runs on BM25 alone (for EmbedDownFor); EmbedderError says why.
	EmbedderOK    bool   `json:"embedderOk"`
	EmbedderError string `json:"embedderError,omitempty"`
	// LastMemoryAt is when the newest memory (holding or history) in the
	// caller's scopes was stored, unix ms; 0 when there is none.
	LastMemoryAt int64 `json:"lastMemoryAt,omitempty"`
	// IndexKind is exact or ivf, and IndexTrained whether the approximate
	// index is trained; empty when the store cannot tell. Stats fills them
	// from the one IndexState it reads.
	IndexKind    string `json:"indexKind,omitempty"`
	IndexTrained bool   `json:"indexTrained,omitempty"`
}

func (e *Engine) health(ctx context.Context, f engine.ScopeFilter) (Health, error) {
	h := Health{EmbedderOK: true}
	if until, down := e.embedderDown(e.now()); down {
		h.EmbedderOK = false
		h.EmbedderError = "the embedder failed a recent query; recall runs on BM25 alone until " +
			until.UTC().Format(time.TimeOnly)
	}
	newest, err := e.store.List(ctx, engine.ListOptions{Scopes: f, Limit: 1, History: true})
	if err != nil {
		return Health{}, err
	}
	if len(newest) == 1 {
		h.LastMemoryAt = newest[0].Timestamp
	}
	return h, nil
}
