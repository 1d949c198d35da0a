package memory_test

import (
	"context"
	"testing"

	"github.com/clawmem/clawmem/engine/memory"
)

// A batch prepared while another was being committed is checked at its own
// commit against what that one stored: the store worker prepares batch n+1
// while batch n commits, and neither a duplicate nor a retried id may slip
// through the gap between the two.
func TestPreparedBatchSeesEarlierCommits(t *testing.T) {
	ctx := context.Background()
	who := memory.Agent("A")
	item := func(id, text string) memory.BatchItem {
		return memory.BatchItem{Who: who, Req: memory.StoreRequest{ID: id, Text: text}, Dedup: memory.DedupTool}
	}
	commit := func(e *memory.Engine, p *memory.PreparedBatch) ([]memory.StoreResult, []error) {
		t.Helper()
		res, errs, err := e.CommitBatch(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("item %d: %v", i, err)
			}
		}
		return res, errs
	}
	prepare := func(e *memory.Engine, items ...memory.BatchItem) *memory.PreparedBatch {
		t.Helper()
		p, err := e.PrepareBatch(ctx, items)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("duplicate", func(t *testing.T) {
		e := newEngine(t, setup{})
		a := prepare(e, item("", "The user's favourite colour is teal"))
		b := prepare(e, item("", "The user's favourite colour is teal"), item("", "The office closes at six on Fridays"))
		ra, _ := commit(e, a)
		rb, _ := commit(e, b)
		if ra[0].Status != memory.Created || rb[0].Status != memory.Duplicate || rb[0].Memory.ID != ra[0].Memory.ID || rb[1].Status != memory.Created {
			t.Fatalf("first %+v; second %+v", ra, rb)
		}
		if n := len(all(t, e)); n != 2 {
			t.Fatalf("%d memories stored, want 2", n)
		}
	})

	t.Run("retried id", func(t *testing.T) {
		e := newEngine(t, setup{})
		const id = "6f1d6c2e-0000-4b4e-9c53-6b8f3f0e2a11"
		a := prepare(e, item(id, "The backup runs at midnight"))
		b := prepare(e, item(id, "The backup runs at midnight"))
		ra, _ := commit(e, a)
		rb, _ := commit(e, b)
		if ra[0].Status != memory.Created || rb[0].Memory.ID != id || rb[0].Status == memory.Created {
			t.Fatalf("first %+v; retry %+v", ra, rb)
		}
		if n := len(all(t, e)); n != 1 {
			t.Fatalf("%d memories stored, want 1", n)
		}
	})

	t.Run("forgotten meanwhile", func(t *testing.T) {
		// The duplicate found at preparation is deleted before the
		// commit: the item is stored, not dropped as a duplicate of
		// nothing.
		e := newEngine(t, setup{})
		old := mustStore(t, e, who, memory.StoreRequest{Text: "The staging server is called kestrel"})
		b := prepare(e, item("", "The staging server is called kestrel"))
		if _, err := e.Forget(ctx, who, memory.ForgetRequest{ID: old.ID}); err != nil {
			t.Fatal(err)
		}
		rb, _ := commit(e, b)
		if rb[0].Status != memory.Created {
			t.Fatalf("after the forget: %+v", rb[0])
		}
	})

	t.Run("many writes meanwhile", func(t *testing.T) {
		// More batches than are kept at hand commit in between: the
		// commit searches the store again and still finds the duplicate.
		e := newEngine(t, setup{})
		b := prepare(e, item("", "Deploys need two approvals"))
		texts := []string{"alpha one", "bravo two", "charlie three", "delta four", "echo five", "foxtrot six",
			"golf seven", "hotel eight", "india nine", "juliet ten", "Deploys need two approvals"}
		var dupOf string
		for _, text := range texts {
			r, _ := commit(e, prepare(e, item("", text)))
			if text == texts[0] || r[0].Status == memory.Created {
				dupOf = r[0].Memory.ID
			}
		}
		rb, _ := commit(e, b)
		if rb[0].Status != memory.Duplicate || rb[0].Memory.ID != dupOf {
			t.Fatalf("after %d batches: %+v, want a duplicate of %s", len(texts), rb[0], dupOf)
		}
	})
}
