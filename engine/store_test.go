package engine

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/schemas"
)

func TestStampedAndForImport(t *testing.T) {
	in := []schemas.Memory{{Text: "a", ID: "keep-me-not"}, {Text: "b"}}
	out := Stamped(in, 42)
	if out[0].ID == "keep-me-not" || !schemas.IsUUID(out[0].ID) || out[0].ID == out[1].ID || out[1].Timestamp != 42 || in[0].ID != "keep-me-not" {
		t.Fatalf("Stamped: %+v (input %+v)", out, in)
	}
	const id = "0F8FAD5B-D9CB-469F-A165-70867728950E"
	got, err := ForImport([]schemas.Memory{{ID: id, Timestamp: 7}, {Text: "no id"}}, 99)
	if err != nil || got[0].ID != "0f8fad5b-d9cb-469f-a165-70867728950e" || got[0].Timestamp != 7 ||
		!schemas.IsUUID(got[1].ID) || got[1].Timestamp != 99 {
		t.Fatalf("ForImport: %+v %v", got, err)
	}
	if _, err := ForImport([]schemas.Memory{{ID: "../x"}}, 1); !errors.Is(err, schemas.ErrInvalid) {
		t.Fatalf("a non-UUID id gave %v", err)
	}
}

// CosineForScore is VectorScore's inverse over the cosines' range.
func TestCosineForScore(t *testing.T) {
	for _, c := range []float64{-1, -0.3, 0, 0.5, 0.9, 0.98, 1} {
		if got := CosineForScore(VectorScore(c)); math.Abs(got-c) > 1e-12 {
			t.Fatalf("cosine %v: round trip %v", c, got)
		}
	}
}

func TestMarkCore(t *testing.T) {
	tests := []struct {
		in   string
		core bool
		want string
	}{
		{"", false, ""},
		{"", true, `{"core":true}`},
		{`{"source":"capture"}`, false, `{"source":"capture"}`},
		{`{"source":"capture"}`, true, `{"core":true,"source":"capture"}`},
		{`{"core":true, "a":1}`, true, `{"a":1,"core":true}`},
		{`{"core":false,"core":true}`, true, `{"core":true}`},
		{`{"core":true,"a":1}`, false, `{"a":1}`},
		{`{"core":"true"}`, true, `{"core":true}`},
		{`{"core":1}`, false, `{}`},
		{`not json`, true, `not json`},
		{`[1,2]`, true, `[1,2]`},
		{`null`, true, `{"core":true}`},
		{`null`, false, `null`},
	}
	for _, tt := range tests {
		got := MarkCore(json.RawMessage(tt.in), tt.core)
		if string(got) != tt.want {
			t.Errorf("MarkCore(%s, %v) = %s, want %s", tt.in, tt.core, got, tt.want)
		}
		if strings.HasPrefix(string(got), "{") && MarkedCore(got) != tt.core {
			t.Errorf("MarkCore(%s, %v) = %s, which MarkedCore reads as %v", tt.in, tt.core, got, !tt.core)
		}
	}
}

// FuzzMarkCore: whatever the metadata, MarkCore never fails; what it
// changes stays a JSON object that says the mark it was given.
func FuzzMarkCore(f *testing.F) {
	for _, s := range []string{"", "{}", `{"core":true}`, `{"core":1,"a":[1,{"core":true}]}`, "null", "[1]", `{"a":"\ud800"}`, "{"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, md string, core bool) {
		out := MarkCore(json.RawMessage(md), core)
		if string(out) == md {
			return
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(out, &fields) != nil || MarkedCore(out) != core {
			t.Fatalf("MarkCore(%q, %v) = %q", md, core, out)
		}
	})
}

// CheckPatch and ApplyPatch are the one reading of a Patch both store
// backends share: nil fields stay, set fields replace, and the refusals
// come before anything changes.
func TestCheckAndApplyPatch(t *testing.T) {
	text, scope, cat, imp := "new text", "agent:b", schemas.CategoryDecision, 0.9
	const other = "0f8fad5b-d9cb-469f-a165-70867728950e"
	base := schemas.Memory{ID: "7c9e6679-7425-40de-944b-e07fc1f90ae7", Text: "old", Vector: []float32{1, 0},
		Category: "fact", Scope: "agent:a", Importance: 0.5, Metadata: json.RawMessage(`{"k":1}`)}
	tests := []struct {
		name     string
		p        Patch
		f        ScopeFilter
		checkErr error
		applyErr error
		want     func(m *schemas.Memory)
	}{
		{name: "empty patch changes nothing", f: AllScopes(), want: func(*schemas.Memory) {}},
		{name: "text with vector", p: Patch{Text: &text, Vector: []float32{0, 1}}, f: AllScopes(),
			want: func(m *schemas.Memory) { m.Text, m.Vector = text, []float32{0, 1} }},
		{name: "text without vector", p: Patch{Text: &text}, f: AllScopes(), checkErr: schemas.ErrInvalid},
		{name: "scalars", p: Patch{Category: &cat, Importance: &imp, Metadata: json.RawMessage(`{}`)}, f: AllScopes(),
			want: func(m *schemas.Memory) { m.Category, m.Importance, m.Metadata = cat, imp, json.RawMessage(`{}`) }},
		{name: "move to an allowed scope", p: Patch{Scope: &scope}, f: InScopes("agent:a", "agent:b"),
			want: func(m *schemas.Memory) { m.Scope = scope }},
		{name: "move to a denied scope", p: Patch{Scope: &scope}, f: InScopes("agent:a"), checkErr: ErrScopeDenied},
		{name: "supersede", p: Patch{Invalidate: &Invalidation{SupersededBy: other, At: 5}}, f: AllScopes(),
			want: func(m *schemas.Memory) { m.SupersededBy, m.InvalidatedAt = other, 5 }},
		{name: "supersede by itself", p: Patch{Invalidate: &Invalidation{SupersededBy: base.ID, At: 5}}, f: AllScopes(),
			applyErr: schemas.ErrInvalid},
		{name: "restore a current memory", p: Patch{Restore: true}, f: AllScopes(), applyErr: schemas.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckPatch(tt.p, tt.f); !errors.Is(err, tt.checkErr) {
				t.Fatalf("CheckPatch: %v, want %v", err, tt.checkErr)
			}
			if tt.checkErr != nil {
				return
			}
			m := base
			err := ApplyPatch(&m, tt.p)
			if !errors.Is(err, tt.applyErr) {
				t.Fatalf("ApplyPatch: %v, want %v", err, tt.applyErr)
			}
			if err != nil {
				return
			}
			want := base
			tt.want(&want)
			if !reflect.DeepEqual(m, want) {
				t.Fatalf("patched %+v\nwant    %+v", m, want)
			}
		})
	}
}
