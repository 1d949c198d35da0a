package capture_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/testkit/pipelinetest"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/stage"
)

// TestCaptureRefusesProbes publishes a turn whose user messages each carry
// one of the issue 26 probe texts after a capture trigger, then a plain
// preference: only the preference becomes a memory.
func TestCaptureRefusesProbes(t *testing.T) {
	data, err := os.ReadFile("../../testdata/injection/probes.txt")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []schemas.Message
	for line := range strings.Lines(string(data)) {
		if p := strings.TrimSuffix(line, "\n"); p != "" && !strings.HasPrefix(p, "//") {
			msgs = append(msgs, testkit.UserMsg("Remember that I prefer short answers.\n"+p))
		}
	}
	if len(msgs) != 12 {
		t.Fatalf("%d probe texts, want 12", len(msgs))
	}
	const control = "I prefer green tea in the afternoon"
	msgs = append(msgs, testkit.UserMsg(control))
	p := pipelinetest.Start(t, nil, stage.Config{})
	p.PublishAgentEnd(t, "main", "s-probes", msgs, "")
	testkit.WaitFor(t, 10*time.Second, func() error {
		if _, ok := p.Texts(t)[control]; !ok {
			return fmt.Errorf("control memory not stored yet")
		}
		return nil
	})
	if got := p.Texts(t); len(got) != 1 {
		t.Fatalf("stored %d memories, want only the control: %v", len(got), got)
	}
}
