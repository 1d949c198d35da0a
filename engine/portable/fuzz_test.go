package portable

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/clawmem/clawmem/schemas"
)

func addFixtureSeeds(f *testing.F) {
	for _, name := range []string{"memory-lancedb-pro-export.json", "memory-lancedb-rows.jsonl", "memory-lancedb-rows.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzDecodeRow: any input either fails as a bad row or gives a memory the
// store accepts, and writing that memory out and reading it back gives the
// same memory.
func FuzzDecodeRow(f *testing.F) {
	for _, s := range []string{
		`{"id":"` + testID + `","text":"dark mode","category":"preference","scope":"agent:main","importance":0.8,"timestamp":1730000000000,"metadata":{"a":1}}`,
		`{"text":"x","createdAt":"2024-07-03T09:30:00.000Z","vector":[1,2,3],"metadata":"{\"k\":1}"}`,
		`{"id":"legacy-1","text":"t","importance":"x"}`, `null`, `[]`, `{"text":"\u2028\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeRow(data, "")
		if err != nil {
			if !errors.Is(err, ErrRow) {
				t.Fatalf("error %v is not a row error", err)
			}
			return
		}
		if !schemas.IsUUID(m.ID) || m.Validate() != nil || m.Timestamp < 0 {
			t.Fatalf("accepted an invalid memory %+v: %v", m, m.Validate())
		}
		again, err := DecodeRow(AppendRow(nil, m, true), "")
		if err != nil {
			t.Fatalf("written row does not read back: %v", err)
		}
		if !sameMemory(m, again) {
			t.Fatalf("round trip changed the memory:\n%+v\n%+v", m, again)
		}
	})
}

// FuzzReader: any file reads to the end without panicking; rows are valid
// or carry an error, and line numbers never go backwards.
func FuzzReader(f *testing.F) {
	addFixtureSeeds(f)
	for _, s := range []string{"", "{", "[", "{\"memories\":[{\"text\":\"a\"},", "{\"text\":\"a\"}\n{\"text\"", "\xef\xbb\xbf[]", "{\"version\":1}{}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), ReadOptions{})
		last := 0
		for n := 0; ; n++ {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				t.Fatalf("an in-memory file failed: %v", err)
			}
			if n > len(data)+1 {
				t.Fatalf("more rows than bytes")
			}
			if rec.Line < 1 || rec.Line < last {
				t.Fatalf("line %d after %d", rec.Line, last)
			}
			last = rec.Line
			if rec.Err == nil && (rec.Memory.Validate() != nil || !schemas.IsUUID(rec.Memory.ID)) {
				t.Fatalf("invalid row accepted: %+v", rec.Memory)
			}
			if r.Offset() > int64(len(data)) {
				t.Fatalf("offset %d beyond %d bytes", r.Offset(), len(data))
			}
		}
	})
}

// FuzzAppendRow: any text, scope and metadata bytes make one line of valid
// JSON that decodes to the same text (when it was valid UTF-8).
func FuzzAppendRow(f *testing.F) {
	f.Add("dark mode", "global", []byte(`{"a":1}`), 0.5)
	f.Add("a\"b\\c\n\u2028\x00\xff", "x y", []byte("{\n}"), -1.0)
	f.Add("", "", []byte("not json"), 2.0)
	f.Add("x", "0", []byte("0"), 0.5) // valid JSON that is no object
	f.Fuzz(func(t *testing.T, text, scope string, meta []byte, imp float64) {
		if imp != imp || imp > 1e300 || imp < -1e300 {
			return // JSON has no NaN or infinity; the store clamps before this
		}
		row := AppendRow(nil, schemas.Memory{ID: testID, Text: text, Scope: scope, Importance: imp, Metadata: meta}, false)
		if bytes.ContainsAny(row, "\n\r") {
			t.Fatalf("row spans lines: %q", row)
		}
		var got struct {
			Text     string          `json:"text"`
			Scope    string          `json:"scope"`
			Metadata json.RawMessage `json:"metadata"`
		}
		if err := json.Unmarshal(row, &got); err != nil {
			t.Fatalf("invalid JSON %q: %v", row, err)
		}
		if utf8.ValidString(text) && got.Text != text {
			t.Fatalf("text %q came back as %q", text, got.Text)
		}
		if len(got.Metadata) == 0 || got.Metadata[0] != '{' {
			t.Fatalf("metadata %s is no object", got.Metadata)
		}
	})
}

// FuzzParseVector: any valid JSON array of numbers reads as encoding/json
// reads it (to float32 precision), anything else is refused, nothing panics.
func FuzzParseVector(f *testing.F) {
	for _, s := range []string{"[1,2,3]", "[]", "[-0.5e-3, 1E10]", "[1,\"x\"]", "[[1]]", "[1e39]", "[", "1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseVector(data)
		if !json.Valid(data) {
			return // rows are valid JSON before their vector is read
		}
		var want []float64
		jerr := json.Unmarshal(data, &want)
		if err != nil {
			if jerr == nil && len(want) <= MaxVectorDims {
				for _, w := range want {
					if float32(w) > -math.MaxFloat32 && float32(w) < math.MaxFloat32 {
						continue
					}
					return // out of float32 range: refused rightly
				}
				t.Fatalf("%q refused (%v) but is an array of numbers", data, err)
			}
			return
		}
		if jerr != nil || len(want) != len(got) {
			t.Fatalf("%q read as %v, encoding/json says %v %v", data, got, want, jerr)
		}
		for i := range got {
			if d := math.Abs(float64(got[i]) - want[i]); d > 1e-6*math.Abs(want[i]) && d > 1e-38 {
				t.Fatalf("%q component %d: %v vs %v", data, i, got[i], want[i])
			}
		}
	})
}
