package lancestore

import (
	"errors"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

func TestEscapeSQL(t *testing.T) {
	for _, c := range []struct {
		in, want string
		bad      bool
	}{
		{in: "agent:main", want: "agent:main"},
		{in: "", want: ""},
		{in: "it's", want: "it''s"},
		{in: "' OR 1=1 --", want: "'' OR 1=1 --"},
		{in: "''", want: "''''"},
		{in: "x'); DROP TABLE memories; --", want: "x''); DROP TABLE memories; --"},
		{in: "乌龙茶 🙂", want: "乌龙茶 🙂"},
		{in: `\' OR 1=1 --`, bad: true}, // would close the literal where \ escapes
		{in: `a\b`, bad: true},
		{in: "nul\x00byte", bad: true}, // a C string ends at NUL
		{in: "\xff\xfe", bad: true},
	} {
		got, err := escapeSQL(c.in)
		if c.bad {
			if !errors.Is(err, schemas.ErrInvalid) {
				t.Errorf("escapeSQL(%q) = %q, %v; want ErrInvalid", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("escapeSQL(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if l, err := literal("it's"); err != nil || l != "'it''s'" {
		t.Errorf("literal = %q, %v", l, err)
	}
}

// FuzzEscapeSQL: whatever the input, an accepted string becomes a literal
// body that no dialect can end early — quotes come only in pairs, and
// there is no backslash or NUL — and that reads back as the input.
func FuzzEscapeSQL(f *testing.F) {
	for _, s := range []string{"a", "'", "''", `\'`, "' OR 1=1 --", "x\x00", "é'ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		body, err := escapeSQL(s)
		if err != nil {
			return
		}
		if strings.ContainsAny(body, "\\\x00") {
			t.Fatalf("%q: body %q holds an escape character", s, body)
		}
		for run := range strings.FieldsFuncSeq(body, func(r rune) bool { return r != '\'' }) {
			if len(run)%2 != 0 {
				t.Fatalf("%q: body %q has an unpaired quote", s, body)
			}
		}
		if back := strings.ReplaceAll(body, "''", "'"); back != s {
			t.Fatalf("%q reads back as %q", s, back)
		}
	})
}

func TestIDConditions(t *testing.T) {
	id := "abcdef01-0000-4000-8000-000000000001"
	if c, err := idIs(id); err != nil || c != "id = '"+id+"'" {
		t.Errorf("idIs = %q, %v", c, err)
	}
	if c, err := idIn([]string{id, "x'y"}); err != nil || c != "id IN ('"+id+"', 'x''y')" {
		t.Errorf("idIn = %q, %v", c, err)
	}
	if c, err := idPrefix("abcdef01"); err != nil || c != "id LIKE 'abcdef01%'" {
		t.Errorf("idPrefix = %q, %v", c, err)
	}
	for _, p := range []string{"abcdef0%", "abcdef0_", `abcdef0\`} {
		if c, err := idPrefix(p); !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("idPrefix(%q) = %q, %v; want ErrInvalid", p, c, err)
		}
	}
}

func TestScopeCond(t *testing.T) {
	for _, c := range []struct {
		name   string
		f      engine.ScopeFilter
		want   string
		wantOK bool
	}{
		{"all", engine.AllScopes(), "", true},
		{"zero filter", engine.ScopeFilter{}, "", false},
		{"no scopes", engine.InScopes(), "", false},
		{"one", engine.InScopes("agent:a"), "scope IN ('agent:a')", true},
		{"global takes unscoped rows", engine.InScopes("global", "agent:a"),
			"scope IN ('agent:a', 'global') OR scope IS NULL OR scope = ''", true},
		{"injection is no scope", engine.InScopes("' OR 1=1 --"), "", false},
		{"invalid names dropped", engine.InScopes("agent:a", "x' OR 'a'='a", `a\b`, strings.Repeat("a", 101)),
			"scope IN ('agent:a')", true},
	} {
		got, ok := scopeCond(c.f)
		if got != c.want || ok != c.wantOK {
			t.Errorf("%s: scopeCond = %q, %v; want %q, %v", c.name, got, ok, c.want, c.wantOK)
		}
	}
}

func TestBulkCond(t *testing.T) {
	if _, _, err := bulkCond(engine.BulkFilter{Scopes: engine.AllScopes()}, true); !errors.Is(err, engine.ErrUnfilteredBulk) {
		t.Fatalf("unfiltered: %v", err)
	}
	for _, c := range []struct {
		name   string
		f      engine.BulkFilter
		float  bool
		want   string
		wantOK bool
	}{
		{"zero filter", engine.BulkFilter{}, true, "", false},
		{"scope", engine.BulkFilter{Scopes: engine.InScopes("agent:a")}, true, "(scope IN ('agent:a'))", true},
		{"before, float column", engine.BulkFilter{Scopes: engine.AllScopes(), Before: 1015}, true, "(timestamp < 1015.0)", true},
		{"before, integer column", engine.BulkFilter{Scopes: engine.AllScopes(), Before: 1015}, false, "(timestamp < 1015)", true},
		{"both", engine.BulkFilter{Scopes: engine.InScopes("agent:a"), Before: 1015}, true,
			"(scope IN ('agent:a')) AND (timestamp < 1015.0)", true},
		{"far future stays exact", engine.BulkFilter{Scopes: engine.InScopes("agent:a"), Before: 1<<63 - 1}, true,
			"(scope IN ('agent:a')) AND (timestamp < 9007199254740992.0)", true},
	} {
		got, ok, err := bulkCond(c.f, c.float)
		if err != nil || got != c.want || ok != c.wantOK {
			t.Errorf("%s: bulkCond = %q, %v, %v; want %q, %v", c.name, got, ok, err, c.want, c.wantOK)
		}
	}
}

func TestListCond(t *testing.T) {
	got, ok, err := listCond(engine.ListOptions{Scopes: engine.InScopes("global"), Category: schemas.CategoryPreference})
	want := "(scope IN ('global') OR scope IS NULL OR scope = '') AND (category = 'preference')"
	if err != nil || !ok || got != want {
		t.Errorf("listCond = %q, %v, %v; want %q", got, ok, err, want)
	}
	if got, ok, err := listCond(engine.ListOptions{Scopes: engine.AllScopes()}); err != nil || !ok || got != "" {
		t.Errorf("all scopes, any category: %q, %v, %v", got, ok, err)
	}
	if _, _, err := listCond(engine.ListOptions{Scopes: engine.AllScopes(), Category: "' OR 1=1 --"}); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("bad category: %v", err)
	}
	if _, ok, _ := listCond(engine.ListOptions{}); ok {
		t.Error("zero filter matches rows")
	}
}

func TestFloatValue(t *testing.T) {
	for in, want := range map[float64]string{0: "0.0", 1: "1.0", 0.2: "0.2", 0.7: "0.7", 1e-7: "0.0000001"} {
		if got := floatValue(in); string(got) != want {
			t.Errorf("floatValue(%v) = %s, want %s", in, got, want)
		}
	}
}
