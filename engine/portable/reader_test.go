package portable

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads every record of data.
func readAll(t testing.TB, data []byte, o ReadOptions) (Format, []Record) {
	t.Helper()
	r := NewReader(bytes.NewReader(data), o)
	var recs []Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		recs = append(recs, rec)
	}
	f, _ := r.Format()
	if r.Offset() != int64(len(data)) && f == JSONL {
		t.Fatalf("offset %d after reading %d bytes", r.Offset(), len(data))
	}
	return f, recs
}

// outcome is a record in brief: its line and its text, or its error.
type outcome struct {
	line int
	text string
	err  string
}

func brief(recs []Record) []outcome {
	out := make([]outcome, len(recs))
	for i, r := range recs {
		out[i] = outcome{line: r.Line, text: r.Memory.Text}
		if r.Err != nil {
			out[i] = outcome{line: r.Line, err: r.Err.Error()}
		}
	}
	return out
}

func TestReaderFormats(t *testing.T) {
	long := `{"text":"` + strings.Repeat("x", MaxLineBytes) + `"}`
	cases := []struct {
		name   string
		data   string
		format Format
		want   []outcome
	}{
		{"empty", "", JSONL, nil},
		{"blank lines", "\n  \n\r\n", JSONL, nil},
		{"jsonl with bad rows", `{"text":"one"}` + "\n\n" + `{"text":` + "\n" + `{"text":"two"}` + "\r\n" + "{\"text\":\"caf\xe9\"}\n" + `{"text":"three"}`, JSONL,
			[]outcome{{line: 1, text: "one"}, {line: 3, err: "malformed JSON: unexpected end of JSON input"}, {line: 4, text: "two"},
				{line: 5, err: "the row is not valid UTF-8"}, {line: 6, text: "three"}}},
		{"jsonl line too long, then more", long + "\n" + `{"text":"after"}` + "\n", JSONL,
			[]outcome{{line: 1, err: "the line is longer than 4194304 bytes"}, {line: 2, text: "after"}}},
		{"jsonl starting with a non-document key", `{"memoriesX":1,"text":"a"}`, JSONL, []outcome{{line: 1, text: "a"}}},
		{"byte order mark", "\xef\xbb\xbf" + `{"text":"bom"}`, JSONL, []outcome{{line: 1, text: "bom"}}},
		{"document", "{\n \"version\": \"1.0\",\n \"count\": 2,\n \"memories\": [\n  {\"text\": \"a\"},\n  {\"text\": 5},\n\n  {\"text\":\n   \"c\"}\n ]\n}\n", JSON,
			[]outcome{{line: 5, text: "a"}, {line: 6, err: `field "text" must be a string, not a number`}, {line: 8, text: "c"}}},
		{"document, memories before other keys", `{"memories":[{"text":"a"}],"version":"1.0","extra":{"x":[1,2]}}`, JSON, []outcome{{line: 1, text: "a"}}},
		{"document broken halfway", "{\"version\":\"1.0\",\"memories\":[\n{\"text\":\"a\"},\n{\"text\":\"b\" oops},\n{\"text\":\"c\"}]}", JSON,
			[]outcome{{line: 2, text: "a"}, {line: 3, err: "malformed JSON (invalid character 'o' after object key:value pair); the rest of the file cannot be read"}}},
		{"document truncated", "{\"memories\":[\n{\"text\":\"a\"},\n{\"te", JSON,
			[]outcome{{line: 2, text: "a"}, {line: 3, err: "the file ends inside the JSON document"}}},
		{"document with memories not an array", `{"version":"1.0","memories":{"text":"a"}}`, JSON,
			[]outcome{{line: 1, err: `the document's "memories" must be an array`}}},
		{"document with trailing data", "{\"memories\":[]}\n{\"text\":\"x\"}", JSON,
			[]outcome{{line: 2, err: "unexpected data after the JSON document"}}},
		{"array of rows", "[\n {\"text\":\"a\",\"createdAt\":1},\n \"nope\",\n {\"text\":\"b\"}\n]", JSONArray,
			[]outcome{{line: 2, text: "a"}, {line: 3, err: "a row must be a JSON object"}, {line: 4, text: "b"}}},
		{"not JSON at all", "hello\nworld\n", JSONL,
			[]outcome{{line: 1, err: "malformed JSON: invalid character 'h' looking for beginning of value"}, {line: 2, err: "malformed JSON: invalid character 'w' looking for beginning of value"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, recs := readAll(t, []byte(c.data), ReadOptions{})
			if f != c.format {
				t.Errorf("format %s, want %s", f, c.format)
			}
			got := brief(recs)
			if len(got) != len(c.want) {
				t.Fatalf("got %d records %+v, want %+v", len(got), got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("record %d: %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestReaderOneByteAtATime(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "memory-lancedb-pro-export.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(iotest.OneByteReader(bytes.NewReader(data)), ReadOptions{})
	var lines []int
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || rec.Err != nil {
			t.Fatalf("%v %v", err, rec.Err)
		}
		lines = append(lines, rec.Line)
	}
	if want := []int{7, 16, 25, 34, 43}; !equalInts(lines, want) {
		t.Fatalf("lines %v, want %v", lines, want)
	}
	if h := r.Header(); h.Version != "1.0" || h.Count != 5 || h.ExportedAt != "2025-11-02T10:15:00.000Z" {
		t.Fatalf("header %+v", h)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReaderIOError(t *testing.T) {
	boom := errors.New("disk on fire")
	r := NewReader(io.MultiReader(strings.NewReader(`{"text":"a"}`+"\n"), iotest.ErrReader(boom)), ReadOptions{})
	rec, err := r.Next()
	if err != nil || rec.Memory.Text != "a" {
		t.Fatalf("first row: %+v %v", rec, err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("want the I/O error, got %v", err)
	}
	r = NewReader(io.MultiReader(strings.NewReader(`{"memories":[{"text":"a"},`), iotest.ErrReader(boom)), ReadOptions{})
	for {
		_, err := r.Next()
		if errors.Is(err, boom) {
			break
		}
		if err != nil {
			t.Fatalf("document: want the I/O error, got %v", err)
		}
	}
}

func TestReaderFixtures(t *testing.T) {
	cases := []struct {
		file   string
		format Format
		scopes []string
		stamps []int64
	}{
		{"memory-lancedb-pro-export.json", JSON, []string{"global", "agent:main", "project:billing", "custom:work", "global"},
			[]int64{1730000000000, 1730100000000, 1730200000000, 1730300000000, 1730400000000}},
		{"memory-lancedb-rows.jsonl", JSONL, []string{"global", "global", "global", "global"},
			[]int64{1719800000000, 1719900000000, 1719999000000, 1720000000000}},
		{"memory-lancedb-rows.json", JSONArray, []string{"global", "global", "global", "global"},
			[]int64{1719800000000, 1719900000000, 1719999000000, 1720000000000}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			f, recs := readAll(t, data, ReadOptions{})
			if f != c.format || len(recs) != len(c.scopes) {
				t.Fatalf("format %s, %d rows", f, len(recs))
			}
			for i, r := range recs {
				if r.Err != nil {
					t.Fatalf("row %d (line %d): %v", i, r.Line, r.Err)
				}
				if r.Memory.Scope != c.scopes[i] || r.Memory.Timestamp != c.stamps[i] {
					t.Errorf("row %d: scope %s timestamp %d, want %s %d", i, r.Memory.Scope, r.Memory.Timestamp, c.scopes[i], c.stamps[i])
				}
			}
		})
	}
}
