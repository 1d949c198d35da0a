package query

import (
	"slices"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/schemas"
)

// tokenBudget and exclude travel from the request to the engine, and the
// reply names the recalled memories (to exclude next turn) and the core
// facts apart.
func TestQueryContextBudgetCoreExclude(t *testing.T) {
	eng := queryTestEngine(t, nil)
	nc, _ := queryStart(t, eng, DefaultConfig())
	_, name := queryOKReply[schemas.StoreDetails](t, nc, querySubj("main", "store"), schemas.StoreRequest{Text: "My name is Anna"})
	_, tea := queryOKReply[schemas.StoreDetails](t, nc, querySubj("main", "store"), schemas.StoreRequest{Text: "I prefer green tea over coffee in the afternoon"})
	for _, text := range []string{"The office coffee machine is on the third floor", "Lunch with the design team is every Friday at noon"} {
		queryOKReply[schemas.StoreDetails](t, nc, querySubj("main", "store"), schemas.StoreRequest{Text: text})
	}
	queryOKReply[schemas.StoreDetails](t, nc, querySubj("other", "store"), schemas.StoreRequest{Text: "My name is Bob"})
	subj := querySubj("main", "context")
	asked := "What do I prefer to drink in the afternoon, green tea or coffee?"
	loose := "Any plans for this afternoon?"

	_, d := queryOKReply[schemas.ContextDetails](t, nc, subj, schemas.ContextRequest{Prompt: asked})
	if len(d.MemoryIDs) == 0 || d.MemoryIDs[0] != tea.ID || !slices.Equal(d.CoreIDs, []string{name.ID}) || d.Count != len(d.MemoryIDs) ||
		!strings.Contains(d.PrependContext, "[core]") || strings.Contains(d.PrependContext, "Bob") {
		t.Fatalf("context: %+v", d)
	}
	_, d = queryOKReply[schemas.ContextDetails](t, nc, subj, schemas.ContextRequest{Prompt: loose})
	if !slices.Contains(d.MemoryIDs, tea.ID) {
		t.Fatalf("loose prompt without exclude: %+v", d)
	}
	_, d = queryOKReply[schemas.ContextDetails](t, nc, subj, schemas.ContextRequest{Prompt: loose, Exclude: []string{tea.ID, name.ID}})
	if slices.Contains(d.MemoryIDs, tea.ID) || strings.Contains(d.PrependContext, "green tea") || !slices.Equal(d.CoreIDs, []string{name.ID}) {
		t.Fatalf("loose prompt, tea excluded: %+v", d)
	}
	_, d = queryOKReply[schemas.ContextDetails](t, nc, subj, schemas.ContextRequest{Prompt: asked, Exclude: []string{tea.ID}})
	if !slices.Contains(d.MemoryIDs, tea.ID) {
		t.Fatalf("asked again, tea excluded: %+v", d)
	}
	_, d = queryOKReply[schemas.ContextDetails](t, nc, subj, schemas.ContextRequest{Prompt: asked, TokenBudget: 55})
	if d.PrependContext != "" || len(d.MemoryIDs)+len(d.CoreIDs)+d.Count != 0 {
		t.Fatalf("budget 55: %+v", d)
	}
	ids := make([]string, 65)
	for i := range ids {
		ids[i] = tea.ID
	}
	for _, body := range []any{
		schemas.ContextRequest{Prompt: asked, TokenBudget: -1},
		schemas.ContextRequest{Prompt: asked, Exclude: ids},
		schemas.ContextRequest{Prompt: asked, Exclude: []string{"not-an-id"}},
		`{"prompt":"x","exclude":"` + tea.ID + `"}`,
	} {
		queryWantError(t, nc, subj, body, schemas.CodeInvalid)
	}
}
