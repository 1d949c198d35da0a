package envsubst

import (
	"errors"
	"strings"
	"testing"
)

func mapLookup(m map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

func TestExpandWith(t *testing.T) {
	env := map[string]string{
		"JINA_API_KEY": "jina_abc",
		"HOST":         "example.com",
		"PORT":         "8080",
		"_x1":          "under",
		"EMPTY":        "",
		"NESTED":       "${HOST}",
	}
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr error
		errText string
	}{
		{name: "no reference", in: "plain-key", want: "plain-key"},
		{name: "empty string", in: "", want: ""},
		{name: "bare dollar kept", in: "$HOST and $ and $$", want: "$HOST and $ and $$"},
		{name: "lone brace kept", in: "{HOST}", want: "{HOST}"},
		{name: "whole value", in: "${JINA_API_KEY}", want: "jina_abc"},
		{name: "embedded", in: "https://${HOST}:${PORT}/v1", want: "https://example.com:8080/v1"},
		{name: "adjacent", in: "${HOST}${PORT}", want: "example.com8080"},
		{name: "underscore and digit", in: "${_x1}", want: "under"},
		{name: "dollar before reference", in: "$${PORT}", want: "$8080"},
		{name: "value not re-expanded", in: "${NESTED}", want: "${HOST}"},
		{name: "unset", in: "Bearer ${MISSING_KEY}", wantErr: ErrUnset, errText: "environment variable MISSING_KEY is not set"},
		{name: "empty counts as unset", in: "${EMPTY}", wantErr: ErrUnset, errText: "environment variable EMPTY is not set"},
		{name: "first unset reported", in: "${HOST}${A}${B}", wantErr: ErrUnset, errText: "environment variable A is not set"},
		{name: "unterminated", in: "key-${HOST", wantErr: ErrSyntax, errText: "unterminated ${ at offset 4"},
		{name: "empty name", in: "${}", wantErr: ErrSyntax, errText: `invalid variable name ""`},
		{name: "spaces in name", in: "${ HOST }", wantErr: ErrSyntax, errText: `invalid variable name " HOST "`},
		{name: "leading digit", in: "${1HOST}", wantErr: ErrSyntax},
		{name: "nested reference", in: "${${HOST}}", wantErr: ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExpandWith(tt.in, mapLookup(env))
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("ExpandWith(%q) error: %v", tt.in, err)
				}
				if got != tt.want {
					t.Fatalf("ExpandWith(%q) = %q, want %q", tt.in, got, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ExpandWith(%q) error = %v, want errors.Is %v", tt.in, err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.errText) {
				t.Fatalf("ExpandWith(%q) error = %q, want it to contain %q", tt.in, err, tt.errText)
			}
			if got != "" {
				t.Fatalf("ExpandWith(%q) returned %q alongside an error", tt.in, got)
			}
		})
	}
}

func TestUnsetErrorNamesVariable(t *testing.T) {
	_, err := ExpandWith("${JINA_API_KEY}", mapLookup(nil))
	if err == nil || err.Error() != "environment variable JINA_API_KEY is not set" {
		t.Fatalf("error = %v", err)
	}
	var unset *UnsetError
	if !errors.As(err, &unset) || unset.Name != "JINA_API_KEY" {
		t.Fatalf("errors.As UnsetError = %+v", unset)
	}
}

func TestExpandUsesProcessEnvironment(t *testing.T) {
	t.Setenv("CLAWMEM_ENVSUBST_TEST", "from-env")
	got, err := Expand("x-${CLAWMEM_ENVSUBST_TEST}-y")
	if err != nil || got != "x-from-env-y" {
		t.Fatalf("Expand = %q, %v", got, err)
	}
	t.Setenv("CLAWMEM_ENVSUBST_TEST", "")
	if _, err := Expand("${CLAWMEM_ENVSUBST_TEST}"); !errors.Is(err, ErrUnset) {
		t.Fatalf("empty variable: error = %v, want ErrUnset", err)
	}
}

func FuzzExpand(f *testing.F) {
	for _, seed := range []string{"", "plain", "${A}", "${A", "$${A}}", "${}", "${${A}}", "a${B}c${C_1}d", "${\x00}", "$", "}{$"} {
		f.Add(seed)
	}
	lookup := func(name string) (string, bool) {
		if strings.HasPrefix(name, "U") {
			return "", false
		}
		return "v", true
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ExpandWith(s, lookup)
		if !strings.Contains(s, "${") {
			if err != nil || got != s {
				t.Fatalf("input without ${ changed: %q -> %q, %v", s, got, err)
			}
			return
		}
		if err != nil {
			if !errors.Is(err, ErrUnset) && !errors.Is(err, ErrSyntax) {
				t.Fatalf("unexpected error kind for %q: %v", s, err)
			}
			return
		}
		// Values are "v", so any ${ left in the output was never expanded.
		if strings.Contains(got, "${") {
			t.Fatalf("ExpandWith(%q) = %q still holds a reference", s, got)
		}
	})
}
