package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/internal/testkit"
)

// LLMJudge speaks to a real chat endpoint's wire format (OpenAI here) and
// turns its answer into a judgement; a model that answers nonsense is a
// refusal, which consolidation treats as a failed judge.
func TestLLMJudge(t *testing.T) {
	answer := `{"same": true, "text": "My dog Rex is a beagle"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		prompt := testkit.OpenAIPrompt(body)
		if !strings.Contains(prompt, "1. I have a beagle called Rex\n2. Rex is my dog, a beagle\n") {
			t.Errorf("prompt %q", prompt)
		}
		testkit.WriteOpenAIReply(w, body["model"], prompt, answer)
	}))
	defer srv.Close()
	llm, err := distill.NewLLM(distill.LLMConfig{Provider: distill.ProviderOpenAI, APIKey: "k", BaseURL: srv.URL + "/v1", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	judge := LLMJudge(llm)
	texts := []string{"I have a beagle called Rex", "Rex is my dog, a beagle"}
	if same, text, err := judge(context.Background(), texts); err != nil || !same || text != "My dog Rex is a beagle" {
		t.Fatalf("judge: %v %q %v", same, text, err)
	}
	answer = "Sure! They look the same to me."
	if _, _, err := judge(context.Background(), texts); !errors.Is(err, distill.ErrRefused) {
		t.Fatalf("nonsense answer: %v", err)
	}
}
