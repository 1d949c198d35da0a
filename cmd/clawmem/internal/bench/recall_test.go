package bench

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/query"
)

// recallOverNATS measures real recalls through a running query service,
// and refuses to measure refusals: an empty query or a bad agent id.
func TestRecallOverNATS(t *testing.T) {
	eng, done := testkit.Engine(t, t.TempDir(), testkit.LocalEmbedder(t, 64))
	defer done()
	_, nc, _ := natsembed.StartTest(t)
	svc := query.New(nc, eng, query.DefaultConfig(), prometheus.NewRegistry(), nil)
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	for _, text := range []string{"The database password rotates monthly", "I drink green tea every morning"} {
		body, _ := json.Marshal(schemas.StoreRequest{Text: text})
		if _, err := nc.Request(schemas.ServiceSubject("main", schemas.OpStore), body, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	p50, p99, err := recallOverNATS(context.Background(), nc, "main", []string{"database password", "green tea"}, 20)
	if err != nil || p50 <= 0 || p99 < p50 {
		t.Fatalf("p50 %v p99 %v err %v", p50, p99, err)
	}
	if _, _, err := recallOverNATS(context.Background(), nc, "main", []string{"  "}, 1); err == nil || !strings.Contains(err.Error(), "invalid") {
		t.Fatalf("bench of refused queries: %v", err)
	}
	if _, _, err := recallOverNATS(context.Background(), nc, "a.b", []string{"tea"}, 1); !errors.Is(err, schemas.ErrInvalid) {
		t.Fatalf("bench with a bad agent: %v", err)
	}
}
