// Package redact finds credentials in text — provider API keys, tokens,
// private keys, passwords said in words, credentials in URLs — and
// replaces them with a marker, so that nothing clawmem stores, embeds or
// sends to a model holds one. It is the one secret detector every surface
// calls: the hook edge, capture, the memory facade, import and
// distillation.
package redact

import (
	"fmt"
	"slices"
	"strings"

	"github.com/clawmem/clawmem/schemas"
)

// Mode is what a surface does with a text that holds a secret.
type Mode string

// Modes: redact (the default) replaces each secret with a marker and keeps
// the rest; refuse rejects the text (ErrSecret) where a caller can be told,
// and drops it where none can (capture); off keeps the text as it is.
const (
	ModeRedact Mode = "redact"
	ModeRefuse Mode = "refuse"
	ModeOff    Mode = "off"
)

// ParseMode reads a mode; "" is ModeRedact.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeRedact, nil
	case ModeRedact, ModeRefuse, ModeOff:
		return m, nil
	}
	return "", fmt.Errorf("%w: secrets mode %q: want redact, refuse or off", schemas.ErrInvalid, s)
}

// ErrSecret is refuse mode's answer. It is an input error
// (schemas.ErrInvalid): retrying the same text cannot help.
var ErrSecret = fmt.Errorf("%w: the text holds a secret", schemas.ErrInvalid)

// Finding is one secret: its kind ("openai-key", "password", …) and its
// byte offsets in the text.
type Finding struct {
	Kind       string
	Start, End int
}

// Marker is what Redact puts in a secret's place.
func Marker(kind string) string { return MarkerPrefix + kind + "]" }

// MarkerPrefix begins every marker.
const MarkerPrefix = "[REDACTED:"

// Find returns the secrets in text, sorted and not overlapping. Where two
// detectors claim overlapping text, the more specific one wins (a provider
// key format over "password is …" over a high-entropy guess).
func Find(text string) []Finding {
	in := &input{text: text, lower: asciiLower(text)}
	in.hits = scanAnchors(in.text, in.lower)
	var cands []candidate
	for _, d := range detectors {
		cands = d(in, cands)
	}
	if len(cands) == 0 {
		return nil
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return a.Start - b.Start
	})
	// taken marks the bytes already found, so that settling overlaps
	// costs the candidates' lengths, not their number squared.
	var out []Finding
	taken := make([]bool, len(text))
	for _, c := range cands {
		if c.End <= c.Start || strings.Contains(text[c.Start:c.End], MarkerPrefix) || slices.Contains(taken[c.Start:c.End], true) {
			continue
		}
		out = append(out, c.Finding)
		for i := c.Start; i < c.End; i++ {
			taken[i] = true
		}
	}
	slices.SortFunc(out, func(a, b Finding) int { return a.Start - b.Start })
	return out
}

// asciiLower lower-cases ASCII letters only, so offsets stay the same.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Redact replaces every secret of text by its Marker and keeps the rest:
// "my db password is [REDACTED:password] and I use postgres".
func Redact(text string) (string, []Finding) {
	fs := Find(text)
	return replace(text, fs), fs
}

// replace puts each finding's marker in its place.
func replace(text string, fs []Finding) string {
	if len(fs) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	at := 0
	for _, f := range fs {
		b.WriteString(text[at:f.Start])
		b.WriteString(Marker(f.Kind))
		at = f.End
	}
	b.WriteString(text[at:])
	return b.String()
}

// Apply is what mode does to text: the text to keep (redacted in redact
// mode), what was found, and in refuse mode an error wrapping ErrSecret
// when anything was. Off returns text untouched and finds nothing.
func Apply(mode Mode, text string) (string, []Finding, error) {
	switch mode {
	case ModeOff:
		return text, nil, nil
	case ModeRefuse:
		fs := Find(text)
		if len(fs) > 0 {
			return text, fs, Refused(fs)
		}
		return text, nil, nil
	}
	out, fs := Redact(text)
	return out, fs, nil
}

// Refused is refuse mode's error for findings: it names their kinds,
// never their text.
func Refused(fs []Finding) error {
	return fmt.Errorf("%w (%s); not stored — secrets.mode is refuse", ErrSecret, Kinds(fs))
}

// Kinds lists the distinct kinds of fs, comma separated, in order of
// first appearance.
func Kinds(fs []Finding) string {
	var kinds []string
	for _, f := range fs {
		if !slices.Contains(kinds, f.Kind) {
			kinds = append(kinds, f.Kind)
		}
	}
	return strings.Join(kinds, ", ")
}
