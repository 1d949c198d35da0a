package workers

import (
	"testing"

	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/testkit"
)

// testDims is the local embedder's size in these tests.
const testDims = 256

func localEmbedder(t testing.TB) embed.Embedder { return testkit.LocalEmbedder(t, testDims) }

// testEngine opens a real SQLite store in a temp dir with default scopes
// and the local embedder (or emb).
func testEngine(t testing.TB, emb embed.Embedder) *memory.Engine {
	t.Helper()
	if emb == nil {
		emb = localEmbedder(t)
	}
	e, _ := testkit.Engine(t, "", emb)
	return e
}
