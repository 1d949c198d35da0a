package capture

import (
	"log/slog"
	"testing"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/schemas"
)

// Smart extraction's DELETE names its target's scope (from the memories
// it showed the model), so the target's writer gets the invalidation.
func TestExtractedInvalidationCarriesItsTargetsScope(t *testing.T) {
	llm, err := distill.NewLLM(distill.LLMConfig{Provider: distill.ProviderOpenAI, APIKey: "test-key", BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	x := newExtractor(ExtractConfig{LLM: llm}, nil, redact.ModeOff, slog.New(slog.DiscardHandler))
	known := []distill.Known{{Alias: "m1", ID: "id-own", Scope: "agent:main"}, {Alias: "m2", ID: "id-shared", Scope: schemas.GlobalScope}}
	items := x.items(&turn{agent: "main", session: "s1"}, []distill.Decision{
		{Action: distill.ActionDelete, Target: "id-shared", Text: "The office moved"},
		{Action: distill.ActionUpdate, Target: "id-own", Text: "I drive a bike now", Category: "fact", Importance: 0.8},
	}, known)
	if len(items) != 2 || items[0].Invalidates != "id-shared" || items[0].Scope != schemas.GlobalScope {
		t.Fatalf("invalidation: %+v", items)
	}
	if items[1].Supersedes != "id-own" || items[1].Scope != "" {
		t.Fatalf("an update keeps the scope the agent's write resolves to: %+v", items[1])
	}
}
