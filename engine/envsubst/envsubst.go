// Package envsubst expands ${VAR} references in configuration values, so
// secrets such as API keys can live in the environment instead of in config
// files.
//
// Only the braced form is recognised: a bare $VAR or a lone $ is left as is,
// because API keys and URLs may legitimately contain dollar signs. Expansion
// is a single pass; a value that itself contains ${...} is not expanded again.
package envsubst

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrUnset is wrapped by every error about a variable that is unset or empty.
var ErrUnset = errors.New("environment variable is not set")

// ErrSyntax is wrapped by every error about a malformed ${...} reference.
var ErrSyntax = errors.New("malformed ${VAR} reference")

// UnsetError names the variable that was missing. An empty value counts as
// unset: an empty API key or URL is never what the user meant.
type UnsetError struct {
	Name string
}

func (e *UnsetError) Error() string {
	return fmt.Sprintf("environment variable %s is not set", e.Name)
}

func (e *UnsetError) Unwrap() error { return ErrUnset }

// Expand replaces every ${VAR} in s with the value of the environment
// variable VAR.
func Expand(s string) (string, error) {
	return ExpandWith(s, os.LookupEnv)
}

// ExpandWith is Expand with the variable source injected, for tests and for
// callers that resolve variables from somewhere other than the process
// environment.
func ExpandWith(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	rest := s
	for {
		start := strings.Index(rest, "${")
		if start < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		b.WriteString(rest[:start])
		offset := len(s) - len(rest) + start
		end := strings.IndexByte(rest[start+2:], '}')
		if end < 0 {
			return "", fmt.Errorf("%w: unterminated ${ at offset %d", ErrSyntax, offset)
		}
		name := rest[start+2 : start+2+end]
		if !validName(name) {
			return "", fmt.Errorf("%w: invalid variable name %q at offset %d", ErrSyntax, name, offset)
		}
		value, ok := lookup(name)
		if !ok || value == "" {
			return "", &UnsetError{Name: name}
		}
		b.WriteString(value)
		rest = rest[start+2+end+1:]
	}
}

// validName accepts shell-style identifiers. Being strict turns typos such as
// "${ OPENAI_API_KEY }" into a syntax error instead of a confusing lookup of a
// variable with spaces in its name.
func validName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
