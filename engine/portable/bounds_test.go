package portable

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// writeFile writes head, n copies of fill and tail to a file in dir,
// without holding the whole file in memory.
func writeFile(t *testing.T, dir, head string, fill byte, n int, tail string) string {
	t.Helper()
	path := filepath.Join(dir, "import")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(head)
	chunk := []byte(strings.Repeat(string(fill), 1<<20))
	for left := n; left > 0; left -= len(chunk) {
		w.Write(chunk[:min(left, len(chunk))])
	}
	w.WriteString(tail)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReaderBoundsMemory: files built to make a streaming JSON decoder
// buffer everything — a whitespace run of 300 MB, a 50 MB string value —
// read with less than 64 MB allocated in all, and the run is reported
// where it starts. Allocation, not the heap, is measured: it bounds the
// peak from above whatever the collector does.
func TestReaderBoundsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 300 MB file")
	}
	const mb = 1 << 20
	gapErr := "no JSON value ends within 5242880 bytes after byte offset %d (line %d): a row longer than that, or a run of whitespace or garbage; the rest of the file cannot be read"
	cases := []struct {
		name   string
		head   string
		fill   byte
		n      int
		tail   string
		format Format
		want   []outcome
	}{
		{"array of 300 MB of spaces", "[", ' ', 300 * mb, "]", JSONArray,
			[]outcome{{line: 1, err: fmtOutcome(gapErr, 1, 1)}}},
		{"array of 300 MB of newlines", "[", '\n', 300 * mb, "]", JSONArray,
			[]outcome{{line: 1, err: fmtOutcome(gapErr, 1, 1)}}},
		{"document whose memories hold a 50 MB string", "{\"version\":\"1.0\",\n\"memories\":[\n{\"text\":\"ok\"},\n{\"text\":\"", 'x', 50 * mb, "\"}]}", JSON,
			[]outcome{{line: 3, text: "ok"}, {line: 3, err: fmtOutcome(gapErr, 44, 3)}}},
		{"document whose filters hold a 50 MB string", "{\"filters\":\"", 'x', 50 * mb, "\",\"memories\":[]}", JSON,
			[]outcome{{line: 1, err: fmtOutcome(gapErr, 10, 1)}}},
		{"jsonl of 300 MB of newlines", "", '\n', 300 * mb, "", JSONL, nil},
		{"jsonl line of 50 MB", "{\"text\":\"", 'x', 50 * mb, "\"}\n{\"text\":\"after\"}\n", JSONL,
			[]outcome{{line: 1, err: "the line is longer than 4194304 bytes"}, {line: 2, text: "after"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), c.head, c.fill, c.n, c.tail)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			r := NewReader(f, ReadOptions{})
			var recs []Record
			for {
				rec, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, rec)
			}
			runtime.ReadMemStats(&after)
			grown := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %.1f MB reading %d MB", float64(grown)/mb, c.n/mb)
			if grown > 64*mb {
				t.Errorf("allocated %d MB, want under 64 MB", grown/mb)
			}
			if fm, _ := r.Format(); fm != c.format {
				t.Errorf("format %s, want %s", fm, c.format)
			}
			got := brief(recs)
			if len(got) != len(c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("record %d: %+v, want %+v", i, got[i], c.want[i])
				}
			}
			if fi, _ := f.Stat(); c.format == JSONL && r.Offset() != fi.Size() {
				t.Errorf("offset %d after a file of %d bytes", r.Offset(), fi.Size())
			}
		})
	}
}

func fmtOutcome(format string, off int64, line int) string { return fmt.Sprintf(format, off, line) }
