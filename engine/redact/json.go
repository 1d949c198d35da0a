package redact

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/clawmem/clawmem/schemas"
)

// RedactJSON redacts every string value of a JSON document — not its keys,
// numbers or structure — and returns the new document with the number of
// findings. A document without secrets comes back as it was, byte for
// byte. Invalid JSON is a schemas.ErrInvalid error.
func RedactJSON(doc []byte) ([]byte, int, error) {
	if !json.Valid(doc) {
		return nil, 0, fmt.Errorf("%w: not valid JSON", schemas.ErrInvalid)
	}
	var out []byte // nil until the first change
	n, copied := 0, 0
	key := "" // the key of the value that follows, if any
	for i := 0; i < len(doc); {
		switch doc[i] {
		case '"':
		case ',', '[', '{':
			key = ""
			fallthrough
		default:
			i++
			continue
		}
		end := stringEnd(doc, i)
		var s string
		if err := json.Unmarshal(doc[i:end], &s); err != nil {
			return nil, 0, fmt.Errorf("%w: string at byte %d: %v", schemas.ErrInvalid, i, err)
		}
		if isKey(doc, end) {
			key = s
			i = end
			continue
		}
		red, fs := redactValue(key, s)
		if len(fs) > 0 {
			n += len(fs)
			out = append(out, doc[copied:i]...)
			out = appendJSONString(out, red)
			copied = end
		}
		i = end
	}
	if out == nil {
		return doc, 0, nil
	}
	return append(out, doc[copied:]...), n, nil
}

// redactValue redacts a string value seen after its key, so that
// {"password": "hunter2"} is read as "password: hunter2".
func redactValue(key, s string) (string, []Finding) {
	if key == "" {
		return Redact(s)
	}
	prefix := key + ": "
	var fs []Finding
	for _, f := range Find(prefix + s) {
		if f.Start >= len(prefix) {
			fs = append(fs, Finding{f.Kind, f.Start - len(prefix), f.End - len(prefix)})
		}
	}
	return replace(s, fs), fs
}

// stringEnd returns the index just past the string literal opening at i
// (the document is valid JSON).
func stringEnd(doc []byte, i int) int {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(doc)
}

// isKey: the string ending at end is followed by a colon.
func isKey(doc []byte, end int) bool {
	for ; end < len(doc); end++ {
		switch doc[end] {
		case ' ', '\t', '\r', '\n':
		case ':':
			return true
		default:
			return false
		}
	}
	return false
}

func appendJSONString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
