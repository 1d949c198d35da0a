package memory_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/schemas"
)

func contextFor(t *testing.T, e *memory.Engine, who memory.Who, prompt string, o memory.ContextOptions) memory.ContextResult {
	t.Helper()
	o.Timeout = 10 * time.Second
	res, err := e.Context(context.Background(), who, prompt, o)
	if err != nil || res.TimedOut {
		t.Fatalf("Context(%q): %+v, %v", prompt, res, err)
	}
	return res
}

func recalledIDs(res memory.ContextResult) []string {
	var ids []string
	for _, c := range res.Memories {
		ids = append(ids, c.Memory.ID)
	}
	return ids
}

// The block, framing included, stays within the budget in English and in
// Chinese and Japanese (a token a character); a memory that does not fit
// is left out whole, and a budget too small for any gives no block.
func TestContextTokenBudget(t *testing.T) {
	tests := []struct {
		name, prompt string
		texts        []string
	}{
		{"en", "Which database did we pick for the billing service?", []string{
			"We picked PostgreSQL 16 for the billing service database after comparing it with MySQL and CockroachDB; " +
				"the deciding points were logical replication, the JSONB columns the invoice renderer needs and the team's experience",
			"The billing service database runs on a managed PostgreSQL instance in Frankfurt",
			"Billing database backups run every night at two",
		}},
		{"zh", "我们为计费服务选了哪个数据库？", []string{
			"我们为计费服务选了PostgreSQL数据库，因为它支持逻辑复制和JSONB，团队也很熟悉它，" + strings.Repeat("这个决定是在比较了很多数据库之后做出的，", 6),
			"计费服务的数据库在法兰克福",
			"计费数据库每天晚上两点备份",
		}},
		{"ja", "請求サービスにどのデータベースを選びましたか？", []string{
			"請求サービスのデータベースにはPostgreSQLを選びました。" + strings.Repeat("論理レプリケーションとJSONBが決め手で、チームも慣れています。", 5),
			"請求サービスのデータベースはフランクフルトにあります",
			"請求データベースのバックアップは毎晩二時です",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, setup{})
			a := memory.Agent("A")
			var long string
			for i, text := range tt.texts {
				m := mustStore(t, e, a, memory.StoreRequest{Text: text})
				if i == 0 {
					long = m.ID
				}
			}
			full := contextFor(t, e, a, tt.prompt, memory.ContextOptions{TokenBudget: retrieve.MaxRecallTokenBudget})
			if !slices.Contains(recalledIDs(full), long) {
				t.Fatalf("without a tight budget the long memory is not recalled: %v", recalledIDs(full))
			}
			tight := rules.EstimateTokens(full.Block) - 1
			res := contextFor(t, e, a, tt.prompt, memory.ContextOptions{TokenBudget: tight})
			if got := rules.EstimateTokens(res.Block); got > tight || res.Block == "" {
				t.Fatalf("block of %d tokens for a budget of %d:\n%s", got, tight, res.Block)
			}
			for _, c := range res.Memories {
				if !strings.Contains(res.Block, rules.SanitizeForContext(c.Memory.Text)) {
					t.Errorf("memory %q is not whole in the block:\n%s", c.Memory.Text, res.Block)
				}
			}
			if slices.Contains(recalledIDs(res), long) && len(res.Memories) == len(full.Memories) {
				t.Errorf("a budget one token short kept every memory: %v", recalledIDs(res))
			}
			none := contextFor(t, e, a, tt.prompt, memory.ContextOptions{TokenBudget: 55})
			if none.Block != "" || len(none.Memories) != 0 {
				t.Errorf("budget 55: %+v, want no block", none)
			}
		})
	}
}

// Core facts lead every block, whatever the prompt asks, up to the
// configured number, newest first; they follow scope isolation exactly.
func TestContextCoreFacts(t *testing.T) {
	e := newEngine(t, setup{scopes: isolationScopes})
	a, b := memory.Agent("A"), memory.Agent("B")
	for _, text := range []string{
		"Never use emojis",
		"My name is Anna",
		"Answer in British English",
		"Ich spreche Deutsch und Tschechisch",
		"We picked PostgreSQL for the billing database",
		"Lunch with the design team is every Friday at noon",
	} {
		mustStore(t, e, a, memory.StoreRequest{Text: text})
	}
	mustStore(t, e, b, memory.StoreRequest{Text: "Call me Bob"})
	mustStore(t, e, b, memory.StoreRequest{Text: "我的名字是王伟"})
	global := mustStore(t, e, a, memory.StoreRequest{Text: "Always reply in plain text", Scope: "global"})

	res := contextFor(t, e, a, "Which database did we pick for billing?", memory.ContextOptions{})
	var core []string
	for _, m := range res.Core {
		core = append(core, m.Text)
	}
	// Newest first: the global instruction, then A's last two.
	if want := []string{"Always reply in plain text", "Ich spreche Deutsch und Tschechisch", "Answer in British English"}; !slices.Equal(core, want) {
		t.Fatalf("core facts %q, want %q", core, want)
	}
	if !strings.Contains(res.Block, "- [core] [preference:global] Always reply in plain text") ||
		strings.Index(res.Block, "[core]") > strings.Index(res.Block, "PostgreSQL") || !strings.Contains(res.Block, rules.FrameEnd) {
		t.Fatalf("block does not lead with the tagged core facts:\n%s", res.Block)
	}
	if strings.Contains(res.Block, "Bob") || strings.Contains(res.Block, "王伟") {
		t.Fatalf("agent B's core facts in A's block:\n%s", res.Block)
	}
	// A greeting needs no retrieval, but the core facts still come.
	hi := contextFor(t, e, b, "hi", memory.ContextOptions{})
	if hi.Skipped == "" || len(hi.Core) != 3 || strings.Contains(hi.Block, "Anna") || strings.Contains(hi.Block, "British") ||
		!strings.Contains(hi.Block, "Call me Bob") || !strings.Contains(hi.Block, "我的名字是王伟") || hi.Core[0].ID != global.ID {
		t.Fatalf("B's greeting: %+v\n%s", hi, hi.Block)
	}
	// C reads global and custom:shared only.
	c := contextFor(t, e, memory.Agent("C"), "hello there, what is up today", memory.ContextOptions{})
	if len(c.Core) != 1 || c.Core[0].ID != global.ID {
		t.Fatalf("C's core facts: %+v", c.Core)
	}

	off := newEngine(t, setup{retrieval: func(c *retrieve.Config) { c.CoreFacts = 0 }})
	mustStore(t, off, a, memory.StoreRequest{Text: "My name is Anna"})
	if res := contextFor(t, off, a, "Where did we put the lab printer?", memory.ContextOptions{}); len(res.Core) != 0 || strings.Contains(res.Block, "Anna") {
		t.Fatalf("coreFacts 0: %+v", res)
	}
}

// The mark is the engine's: set from the text when a memory is written
// or its text changes, whatever the caller's metadata says.
func TestCoreMark(t *testing.T) {
	e := newEngine(t, setup{})
	a := memory.Agent("A")
	ctx := context.Background()
	tests := []struct {
		text, metadata string
		want           bool
	}{
		{"My name is Anna", "", true},
		{"Bitte antworte immer auf Deutsch", `{"source":"auto-capture"}`, true},
		{"Lunch with the design team is every Friday at noon", `{"core":true}`, false},
		{"I prefer dark mode in every code editor", `{"core":false,"source":"manual"}`, false},
	}
	for _, tt := range tests {
		m := mustStore(t, e, a, memory.StoreRequest{Text: tt.text, Metadata: []byte(tt.metadata)})
		got, err := e.Backend().Get(ctx, m.ID, engine.AllScopes())
		if err != nil {
			t.Fatal(err)
		}
		if engine.MarkedCore(got.Metadata) != tt.want || strings.Contains(string(got.Metadata), `"core":false`) {
			t.Errorf("%q stored with metadata %s, want core %v", tt.text, got.Metadata, tt.want)
		}
	}
	m := mustStore(t, e, a, memory.StoreRequest{Text: "Our team lunch is on Fridays", Metadata: []byte(`{"source":"manual"}`)})
	for _, tc := range []struct {
		text string
		want bool
	}{{"Never use emojis", true}, {"Our team lunch moved to Thursdays", false}} {
		text := tc.text
		if _, err := e.Update(ctx, a, memory.UpdateRequest{ID: m.ID, Text: &text}); err != nil {
			t.Fatal(err)
		}
		got, _ := e.Backend().Get(ctx, m.ID, engine.AllScopes())
		if engine.MarkedCore(got.Metadata) != tc.want || !strings.Contains(string(got.Metadata), `"source":"manual"`) {
			t.Errorf("updated to %q: metadata %s, want core %v", text, got.Metadata, tc.want)
		}
	}
}

// A memory injected in the last turns stays out of the block on a
// follow-up that merely touches its topic, and comes back when the prompt
// asks about it again; core facts come whatever the exclusions.
func TestContextExclude(t *testing.T) {
	e := newEngine(t, setup{})
	a := memory.Agent("A")
	pg := mustStore(t, e, a, memory.StoreRequest{Text: "We picked PostgreSQL for the billing database"})
	for _, text := range []string{
		"The billing service runs on Kubernetes in Frankfurt",
		"Lunch with the design team is every Friday at noon",
		"I prefer dark mode in every code editor",
	} {
		mustStore(t, e, a, memory.StoreRequest{Text: text})
	}
	name := mustStore(t, e, a, memory.StoreRequest{Text: "My name is Anna"})
	exclude := []string{pg.ID, name.ID}
	tests := []struct {
		prompt string
		want   bool
	}{
		{"Can you draft the billing invoice email?", false},
		{"What about billing?", false},
		{"Which database did we pick for billing?", true},
	}
	for _, tt := range tests {
		free := contextFor(t, e, a, tt.prompt, memory.ContextOptions{})
		if !slices.Contains(recalledIDs(free), pg.ID) {
			t.Fatalf("%q: the memory is not recalled even without exclude: %v", tt.prompt, recalledIDs(free))
		}
		res := contextFor(t, e, a, tt.prompt, memory.ContextOptions{Exclude: exclude})
		if got := slices.Contains(recalledIDs(res), pg.ID); got != tt.want || strings.Contains(res.Block, "PostgreSQL") != tt.want {
			t.Errorf("%q with the memory excluded: in the block %v, want %v\n%s", tt.prompt, got, tt.want, res.Block)
		}
		if len(res.Core) != 1 || res.Core[0].ID != name.ID {
			t.Errorf("%q: core facts %+v, want the name although excluded", tt.prompt, res.Core)
		}
	}
}

func TestContextRejectsBadOptions(t *testing.T) {
	e := newEngine(t, setup{})
	a := memory.Agent("A")
	many := make([]string, memory.MaxContextExclude+1)
	for i := range many {
		many[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
	}
	tests := []struct {
		name string
		o    memory.ContextOptions
		want string
	}{
		{"negative budget", memory.ContextOptions{TokenBudget: -1}, "tokenBudget -1"},
		{"budget past the maximum", memory.ContextOptions{TokenBudget: retrieve.MaxRecallTokenBudget + 1}, "allowed range"},
		{"too many ids", memory.ContextOptions{Exclude: many}, "65 ids, at most 64"},
		{"not an id", memory.ContextOptions{Exclude: []string{"abc"}}, `"abc", not a memory id`},
		{"a prefix is not enough", memory.ContextOptions{Exclude: []string{many[0][:8]}}, "not a memory id"},
	}
	for _, tt := range tests {
		res, err := e.Context(context.Background(), a, "Which database did we pick?", tt.o)
		if !errors.Is(err, schemas.ErrInvalid) || !strings.Contains(err.Error(), tt.want) || res.Block != "" {
			t.Errorf("%s: %+v, %v; want ErrInvalid saying %q", tt.name, res, err, tt.want)
		}
	}
	if _, err := e.Context(context.Background(), a, "Which database did we pick?", memory.ContextOptions{Exclude: many[:64]}); err != nil {
		t.Errorf("64 ids: %v", err)
	}
}
