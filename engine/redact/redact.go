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
	// A marker of an earlier redaction is no secret, nor is any part of
	// it ("url-password]@0" after "://:"): redacting again changes nothing.
	for at := 0; ; {
		k := strings.Index(text[at:], MarkerPrefix)
		if k < 0 {
			break
		}
		s, e := at+k, at+k+len(MarkerPrefix)
		if end := strings.IndexByte(text[e:], ']'); end >= 0 {
			e += end + 1
		}
		for i := s; i < e; i++ {
			taken[i] = true
		}
		at = e
	}
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
//
// A marker can bring a keyword next to a value that the words it replaced
// kept apart ("pw is0000! !000000A"), so the redacted text is searched
// again until nothing more is found: redacting twice changes nothing. A
// later pass's findings are mapped back, so every finding indexes text.
func Redact(text string) (string, []Finding) {
	fs := Find(text)
	for pass := 1; pass < maxPasses && len(fs) > 0; pass++ {
		// A finding in the redacted text lies outside every marker (Find
		// never reads into one), so it maps back to the same bytes of text.
		out, back := replaceMapped(text, fs)
		more := Find(out)
		if len(more) == 0 {
			return out, fs
		}
		for _, f := range more {
			fs = append(fs, Finding{f.Kind, back(f.Start), back(f.End-1) + 1})
		}
		slices.SortFunc(fs, func(a, b Finding) int { return a.Start - b.Start })
	}
	return replace(text, fs), fs
}

// maxPasses bounds Redact's passes; each removes text, so few are needed.
const maxPasses = 4

// replaceMapped is replace, with a function from a byte of the result
// that is not in a marker to the same byte of text.
func replaceMapped(text string, fs []Finding) (string, func(int) int) {
	type segment struct{ out, in int }
	segs := []segment{{0, 0}}
	n, at := 0, 0
	for _, f := range fs {
		n += f.Start - at
		n += len(Marker(f.Kind))
		at = f.End
		segs = append(segs, segment{n, at})
	}
	back := func(o int) int {
		k, _ := slices.BinarySearchFunc(segs, o, func(s segment, o int) int { return s.out - o })
		if k == len(segs) || segs[k].out > o {
			k--
		}
		return segs[k].in + o - segs[k].out
	}
	return replace(text, fs), back
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
