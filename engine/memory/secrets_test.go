package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/schemas"
)

// fakeToken is a GitHub token's shape, and fake.
const fakeToken = "ghp_FAKE1234567890abcdefGHIJKLmnopqrstuv"

// recordingEmbedder keeps every text it is asked to embed.
type recordingEmbedder struct {
	embed.Embedder
	mu    sync.Mutex
	texts []string
}

func (r *recordingEmbedder) record(texts ...string) {
	r.mu.Lock()
	r.texts = append(r.texts, texts...)
	r.mu.Unlock()
}

func (r *recordingEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	r.record(text)
	return r.Embedder.EmbedQuery(ctx, text)
}

func (r *recordingEmbedder) EmbedPassage(ctx context.Context, text string) ([]float32, error) {
	r.record(text)
	return r.Embedder.EmbedPassage(ctx, text)
}

func (r *recordingEmbedder) EmbedPassages(ctx context.Context, texts []string) ([][]float32, error) {
	r.record(texts...)
	return r.Embedder.EmbedPassages(ctx, texts)
}

func (r *recordingEmbedder) saw(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.texts, func(t string) bool { return strings.Contains(t, s) })
}

// TestSecretsModes: what store, update and recall do with a credential in
// each mode — stored and embedded redacted, refused with a clear error, or
// kept as it is.
func TestSecretsModes(t *testing.T) {
	ctx := context.Background()
	text := "The deploy bot uses the token " + fakeToken + " for the release repo"
	for _, mode := range []redact.Mode{redact.ModeRedact, redact.ModeRefuse, redact.ModeOff} {
		t.Run(string(mode), func(t *testing.T) {
			emb := &recordingEmbedder{Embedder: localEmbedder(t)}
			e := newEngine(t, setup{emb: emb, secrets: mode})
			a := memory.Agent("A")
			meta := json.RawMessage(`{"note":"password: Fake-Pw-8842!x"}`)
			res, err := e.Store(ctx, a, memory.StoreRequest{Text: text, Metadata: meta}, 0)
			switch mode {
			case redact.ModeRefuse:
				if !errors.Is(err, redact.ErrSecret) || !errors.Is(err, schemas.ErrInvalid) || !memory.IsInputError(err) {
					t.Fatalf("refuse: %v, want an input error wrapping ErrSecret", err)
				}
				if strings.Contains(err.Error(), fakeToken) || !strings.Contains(err.Error(), "github-token") {
					t.Errorf("refuse error %q: want the kind, never the secret", err)
				}
				if n := total(t, e); n != 0 {
					t.Errorf("%d memories stored in refuse mode", n)
				}
			case redact.ModeRedact:
				if err != nil {
					t.Fatal(err)
				}
				if res.Memory.Text != "The deploy bot uses the token [REDACTED:github-token] for the release repo" ||
					strings.Contains(string(res.Memory.Metadata), "Fake-Pw") {
					t.Errorf("stored %q %s", res.Memory.Text, res.Memory.Metadata)
				}
			case redact.ModeOff:
				if err != nil || res.Memory.Text != text {
					t.Fatalf("off: %q, %v", res.Memory.Text, err)
				}
			}
			if got := emb.saw(fakeToken); got != (mode == redact.ModeOff) {
				t.Errorf("the embedder saw the token: %v", got)
			}

			// An update's new text is checked the same way.
			plain := mustStore(t, e, a, memory.StoreRequest{Text: "The release repo lives on the internal forge"})
			newText := "The release repo lives on the internal forge, pushed to with " + fakeToken
			up, err := e.Update(ctx, a, memory.UpdateRequest{ID: plain.ID, Text: &newText})
			switch {
			case mode == redact.ModeRefuse && !errors.Is(err, redact.ErrSecret):
				t.Errorf("update in refuse mode: %v", err)
			case mode == redact.ModeRedact && (err != nil || up.Memory == nil || strings.Contains(up.Memory.Text, fakeToken)):
				t.Errorf("update in redact mode: %+v, %v", up.Memory, err)
			case mode == redact.ModeOff && (err != nil || up.Memory == nil || up.Memory.Text != newText):
				t.Errorf("update in off mode: %+v, %v", up.Memory, err)
			}

			// A query holding a secret is embedded without it unless off.
			if _, err := e.Recall(ctx, a, "which repo does "+fakeToken+" push to", memory.RecallOptions{Limit: 3}); err != nil {
				t.Fatal(err)
			}
			if got := emb.saw(fakeToken); got != (mode == redact.ModeOff) {
				t.Errorf("after recall, the embedder saw the token: %v", got)
			}
		})
	}
}

// TestSecretsCallerVector: a vector the caller made from the text with the
// secret is not kept; the redacted text is embedded instead.
func TestSecretsCallerVector(t *testing.T) {
	emb := &recordingEmbedder{Embedder: localEmbedder(t)}
	e := newEngine(t, setup{emb: emb})
	vec, err := emb.Embedder.EmbedPassage(context.Background(), "my db password is hunter2!! and I use postgres")
	if err != nil {
		t.Fatal(err)
	}
	m := mustStore(t, e, memory.Agent("A"), memory.StoreRequest{Text: "my db password is hunter2!! and I use postgres", Vector: vec})
	if m.Text != "my db password is [REDACTED:password] and I use postgres" || !emb.saw("[REDACTED:password] and I use postgres") {
		t.Errorf("stored %q; embedded anew: %v", m.Text, emb.saw("[REDACTED:password]"))
	}
}
