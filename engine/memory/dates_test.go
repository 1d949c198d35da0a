package memory_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/temporal"
)

// A relative date is resolved when the memory is stored, against when it
// was said (metadata saidAt, as capture sets it) or else the moment of
// storing, and shown resolved in the auto-recall block.
func TestStoreResolvesRelativeDates(t *testing.T) {
	e := newEngine(t, setup{})
	a := memory.Agent("A")
	said := time.Date(2025, 2, 10, 20, 0, 0, 0, time.UTC) // a Monday
	meta, _ := json.Marshal(map[string]any{"source": "auto-capture", temporal.SaidAtKey: said.UnixMilli()})
	m := mustStore(t, e, a, memory.StoreRequest{Text: "I had a video interview last Thursday with a design studio in Porto", Metadata: meta})
	ds, ok := temporal.StoredDates(m.Metadata)
	if !ok || len(ds) != 1 || ds[0] != (temporal.Date{Text: "last Thursday", Date: "2025-02-06"}) {
		t.Fatalf("stored dates %+v (ok %v), want last Thursday = 2025-02-06; metadata %s", ds, ok, m.Metadata)
	}
	var md map[string]any
	if err := json.Unmarshal(m.Metadata, &md); err != nil || md["source"] != "auto-capture" {
		t.Errorf("the caller's metadata is not kept: %s", m.Metadata)
	}

	// No saidAt: resolved against the moment of storing.
	now := time.Now().UTC()
	m2 := mustStore(t, e, a, memory.StoreRequest{Text: "My sister Hana flew to Lisbon yesterday for a conference"})
	ds, ok = temporal.StoredDates(m2.Metadata)
	want := now.AddDate(0, 0, -1).Format(time.DateOnly)
	if !ok || len(ds) != 1 || ds[0].Date != want {
		t.Errorf("dates %+v, want yesterday = %s", ds, want)
	}
	// A text that names no time gets no dates key.
	m3 := mustStore(t, e, a, memory.StoreRequest{Text: "I prefer dark mode in every code editor"})
	if _, ok := temporal.StoredDates(m3.Metadata); ok {
		t.Errorf("dates stored for a text without any: %s", m3.Metadata)
	}

	res, err := e.Context(context.Background(), a, "When was my video interview with the design studio in Porto?", memory.ContextOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Block, "last Thursday with a design studio in Porto [last Thursday = 2025-02-06]") {
		t.Errorf("block lacks the resolved date:\n%s", res.Block)
	}
}
