package engine

import (
	"encoding/json"
	"errors"
	"math"
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
