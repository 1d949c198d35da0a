package schemas

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestValidateScope(t *testing.T) {
	for _, ok := range []string{"global", "agent:main", "custom:work", "project:my-app", "user:john.doe", "a_b", strings.Repeat("a", 100)} {
		if err := ValidateScope(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", " ", "agent main", "a/b", "../x", "' OR 1=1 --", "agent:*", "a>b", strings.Repeat("a", 101), "乌龙", "a\x00b"} {
		if err := ValidateScope(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: want ErrInvalid, got %v", bad, err)
		}
	}
}

func TestNormalizeAndValidate(t *testing.T) {
	m := Memory{Text: "x", Importance: math.NaN()}
	m.Normalize()
	if m.Category != CategoryOther || m.Scope != GlobalScope || string(m.Metadata) != "{}" || m.Importance != DefaultImportance {
		t.Fatalf("normalize: %+v", m)
	}
	for in, want := range map[float64]float64{-1: 0, 0: 0, 0.5: 0.5, 1: 1, 3: 1, math.Inf(1): 1, math.Inf(-1): 0} {
		if got := ClampImportance(in); got != want {
			t.Errorf("clamp(%v) = %v", in, got)
		}
	}
	cases := map[string]Memory{
		"empty text":    {Text: ""},
		"long text":     {Text: strings.Repeat("x", MaxTextBytes+1)},
		"bad utf8":      {Text: "\xff"},
		"bad category":  {Text: "x", Category: "bogus"},
		"bad scope":     {Text: "x", Scope: "no spaces"},
		"bad metadata":  {Text: "x", Metadata: json.RawMessage(`[]`)},
		"nan vector":    {Text: "x", Vector: []float32{float32(math.NaN())}},
		"null metadata": {Text: "x", Metadata: json.RawMessage(`{"a":`)},
	}
	for name, m := range cases {
		m.Normalize()
		if err := m.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: want ErrInvalid, got %v", name, err)
		}
	}
	ok := Memory{Text: "I prefer tea", Category: CategoryPreference, Scope: "agent:a", Vector: []float32{1, 0}, Metadata: json.RawMessage(`{"k":1}`)}
	ok.Normalize()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestParseCategory(t *testing.T) {
	if c, err := ParseCategory(" Preference "); err != nil || c != CategoryPreference {
		t.Fatalf("%v %v", c, err)
	}
	if _, err := ParseCategory("nope"); err == nil || !strings.Contains(err.Error(), "reflection") {
		t.Fatalf("error must list valid categories: %v", err)
	}
}

func TestValidateIDOrPrefix(t *testing.T) {
	for _, ok := range []string{"0123abcd", "0123abcd-ef", "0123abcd-ef01-4000-8000-000000000001"} {
		if err := ValidateIDOrPrefix(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "0123abc", "0123ABCD", "0123abcg", "%%%%%%%%", "0123abcd%", "0123abcd' OR 1=1", "0123abcd-ef01-4000-8000-0000000000011"} {
		if err := ValidateIDOrPrefix(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: want ErrInvalid, got %v", bad, err)
		}
	}
}

func FuzzValidateIDOrPrefix(f *testing.F) {
	for _, s := range []string{"0123abcd", "0123abcd-ef01-4000-8000-000000000001", "' OR 1=1 --", "\xff", "abcdef01~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidateIDOrPrefix(s) != nil {
			return
		}
		// Anything accepted is safe in a range query: only hex and dashes,
		// at least 8 hex chars first, at most a UUID long.
		if len(s) < MinPrefixLen || len(s) > 36 || strings.Trim(s, "0123456789abcdef-") != "" {
			t.Fatalf("accepted %q", s)
		}
	})
}

func TestValidateAgentID(t *testing.T) {
	for _, ok := range []string{"main", "discord-bot", "code_agent", "A1"} {
		if err := ValidateAgentID(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a.b", "*", ">", "../x", "a b", "a/b", "a:b", "乌龙", strings.Repeat("a", 65), "a\x00"} {
		if err := ValidateAgentID(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: want ErrInvalid, got %v", bad, err)
		}
	}
}
