package memory_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/schemas"
)

// operations calls every facade method as who, against an existing memory id.
func operations(id string) map[string]func(context.Context, *memory.Engine, memory.Who) error {
	return map[string]func(context.Context, *memory.Engine, memory.Who) error{
		"Store": func(ctx context.Context, e *memory.Engine, w memory.Who) error {
			_, err := e.Store(ctx, w, memory.StoreRequest{Text: "The lab printer is on the third floor"}, memory.DedupTool)
			return err
		},
		"Store with scope": func(ctx context.Context, e *memory.Engine, w memory.Who) error {
			_, err := e.Store(ctx, w, memory.StoreRequest{Text: "The lab printer is on the third floor", Scope: "global"}, memory.DedupTool)
			return err
		},
		"Recall": func(ctx context.Context, e *memory.Engine, w memory.Who) error {
			_, err := e.Recall(ctx, w, "where is the lab printer", memory.RecallOptions{})
			return err
		},
		"Context": func(ctx context.Context, e *memory.Engine, w memory.Who) error {
			_, err := e.Context(ctx, w, "Where did we put the lab printer again?", memory.ContextOptions{Timeout: time.Second})
			return err
		},
		"List": func(ctx context.Context, e *memory.Engine, w memory.Who) error {
			_, err := e.List(ctx, w, memory.ListOptions{})
			return err
		},
		"Stats": func(ctx context.Context, e *memory.Engine, w memory.Who) error {
			_, err := e.Stats(ctx, w, "")
			return err
		},
		"Forget by id": func(ctx context.Context, e *memory.Engine, w memory.Who) error {
			_, err := e.Forget(ctx, w, memory.ForgetRequest{ID: id})
			return err
		},
		"Forget by query": func(ctx context.Context, e *memory.Engine, w memory.Who) error {
			_, err := e.Forget(ctx, w, memory.ForgetRequest{Query: "The coffee machine descaling schedule is monthly"})
			return err
		},
		"Update by id": func(ctx context.Context, e *memory.Engine, w memory.Who) error {
			_, err := e.Update(ctx, w, memory.UpdateRequest{ID: id, Importance: ptr(0.1)})
			return err
		},
		"Update by query": func(ctx context.Context, e *memory.Engine, w memory.Who) error {
			_, err := e.Update(ctx, w, memory.UpdateRequest{ID: "coffee machine descaling", Text: ptr("The coffee machine is descaled weekly now")})
			return err
		},
	}
}

func TestRequestsWithoutValidIdentityAreRefused(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, setup{})
	m := mustStore(t, e, memory.Admin(), memory.StoreRequest{Text: "The coffee machine descaling schedule is monthly", Scope: "global"})
	before := all(t, e)
	for _, tc := range []struct {
		name string
		who  memory.Who
		want error
	}{
		{"zero value", memory.Who{}, memory.ErrNoIdentity},
		{"empty agent", memory.Agent(""), memory.ErrNoIdentity},
		{"dot", memory.Agent("a.b"), schemas.ErrInvalid},
		{"star", memory.Agent("*"), schemas.ErrInvalid},
		{"gt", memory.Agent(">"), schemas.ErrInvalid},
		{"path", memory.Agent("../x"), schemas.ErrInvalid},
		{"space", memory.Agent("a b"), schemas.ErrInvalid},
		{"colon", memory.Agent("A:global"), schemas.ErrInvalid},
		{"too long", memory.Agent(strings.Repeat("a", 65)), schemas.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for op, call := range operations(m.ID) {
				if err := call(ctx, e, tc.who); !errors.Is(err, tc.want) {
					t.Errorf("%s: err %v, want %v", op, err, tc.want)
				}
			}
			after := all(t, e)
			if !reflect.DeepEqual(after, before) {
				t.Fatalf("store changed by refused calls: %+v", after)
			}
		})
	}
}

func TestWhoAccessors(t *testing.T) {
	if w := memory.Agent("main"); w.AgentID() != "main" || w.IsAdmin() {
		t.Errorf("Agent: %+v", w)
	}
	if w := memory.Admin(); w.AgentID() != "" || !w.IsAdmin() {
		t.Errorf("Admin: %+v", w)
	}
	if w := (memory.Who{}); w.AgentID() != "" || w.IsAdmin() {
		t.Errorf("zero Who: %+v", w)
	}
}
