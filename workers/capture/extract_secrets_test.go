package capture_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/capture"
)

// TestSmartExtractionSecrets: the extraction model is never shown a
// secret said in the turn, and a fact in which it repeats one anyway is
// stored redacted.
func TestSmartExtractionSecrets(t *testing.T) {
	const pw = "Fake-Pw-8842!x"
	var mu sync.Mutex
	var prompts []string
	model := &fakeExtractModel{t: t, answer: func(prompt string) string {
		mu.Lock()
		prompts = append(prompts, prompt)
		mu.Unlock()
		return `{"facts":[{"action":"ADD","text":"The staging db password is ` + pw + `","target":"","category":"fact","importance":0.8}]}`
	}}
	p := extractPipeline(t, distill.ProviderOpenAI, model, capture.ExtractConfig{})
	p.PublishAgentEnd(t, "main", "s-secret", []schemas.Message{testkit.UserMsg("Remember that the staging db password is " + pw)}, "")
	testkit.WaitFor(t, 10*time.Second, func() error {
		if cur, _ := rows(t, p); cur != 1 {
			return fmt.Errorf("%d memories", cur)
		}
		return nil
	})
	for text := range p.Texts(t) {
		if text != "The staging db password is [REDACTED:password]" {
			t.Errorf("stored %q", text)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(prompts) == 0 {
		t.Fatal("the model was not asked")
	}
	for _, pr := range prompts {
		if strings.Contains(pr, pw) || !strings.Contains(pr, "[REDACTED:password]") {
			t.Errorf("the model was shown:\n%s", pr)
		}
	}
}
