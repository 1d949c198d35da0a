package client_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/query"
)

// bulks returns the two bulk targets, each over a fresh engine: the store
// opened in process, and a running service reached over NATS.
func bulks(t *testing.T) map[string]client.Bulk {
	t.Helper()
	local, _ := testkit.Engine(t, "", testkit.LocalEmbedder(t, 256))
	remote, _ := testkit.Engine(t, "", testkit.LocalEmbedder(t, 256))
	_, nc, _ := natsembed.StartTest(t)
	svc := query.New(nc, remote, query.DefaultConfig(), prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	return map[string]client.Bulk{
		"local": &client.LocalBulk{Dir: "test", Store: local.Backend(), Engine: local},
		"nats":  client.NewNATSBulk(nc),
	}
}

// TestBulkConformance: import batches (a bad row failing alone, history
// kept), has, count (history included), export, and an import option
// refused for every row — the same on both targets.
func TestBulkConformance(t *testing.T) {
	ctx := context.Background()
	const (
		cur  = "a1000000-0000-4000-8000-000000000001"
		old  = "a1000000-0000-4000-8000-000000000002"
		gone = "a1000000-0000-4000-8000-0000000000ff"
	)
	recs := []portable.Record{
		{Line: 1, Memory: schemas.Memory{ID: cur, Text: "I moved to Berlin", Scope: "global", Category: schemas.CategoryFact, Importance: 0.7, Timestamp: 1_710_000_000_000}},
		{Line: 2, Memory: schemas.Memory{ID: old, Text: "I live in Paris", Scope: "global", Category: schemas.CategoryFact, Importance: 0.7, Timestamp: 1_700_000_000_000,
			SupersededBy: cur, InvalidatedAt: 1_710_000_000_000}},
		{Line: 3, Err: &portable.RowError{Reason: "malformed JSON"}},
	}
	for name, b := range bulks(t) {
		t.Run(name, func(t *testing.T) {
			defer b.Close()
			if err := b.CheckImport(ctx, client.ImportOptions{Scope: "has spaces"}); err == nil {
				t.Error("an invalid scope was accepted for the whole import")
			}
			res, err := b.ImportBatch(ctx, recs, client.ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]portable.Status, len(res))
			for i, r := range res {
				got[i] = r.Status
			}
			if !slices.Equal(got, []portable.Status{portable.Imported, portable.Imported, portable.Failed}) || res[2].Line != 3 {
				t.Fatalf("results %+v", res)
			}
			for id, want := range map[string]bool{cur: true, old: true, gone: false} {
				if has, err := b.Has(ctx, id); err != nil || has != want {
					t.Errorf("Has(%s) = %v, %v; want %v", id, has, err, want)
				}
			}
			if n, err := b.Count(ctx, ""); err != nil || n != 2 {
				t.Errorf("Count = %d, %v; want 2 (history included)", n, err)
			}
			var ids []string
			if err := b.Export(ctx, "", false, func(m schemas.Memory) error {
				ids = append(ids, m.ID)
				if m.ID == old && (m.SupersededBy != cur || m.InvalidatedAt == 0) {
					t.Errorf("history row exported as %+v", m)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, []string{cur, old}) {
				t.Errorf("exported %v", ids)
			}
			if b.Where() == "" {
				t.Error("no name for messages")
			}
		})
	}
}
