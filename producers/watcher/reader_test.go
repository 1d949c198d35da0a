package watcher

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestLineReader(t *testing.T) {
	type line struct {
		text    string
		n       int64
		tooLong bool
	}
	tests := []struct {
		name  string
		input string
		max   int
		want  []line
		end   error
	}{
		{"empty", "", 10, nil, io.EOF},
		{"lines", "a\nbc\n\n", 10, []line{{"a", 2, false}, {"bc", 3, false}, {"", 1, false}}, io.EOF},
		{"partial tail", "a\nbc", 10, []line{{"a", 2, false}}, errPartial},
		{"exactly max", "abcd\nx\n", 4, []line{{"abcd", 5, false}, {"x", 2, false}}, io.EOF},
		{"too long", "abcde\nx\n", 4, []line{{"", 6, true}, {"x", 2, false}}, io.EOF},
		{"too long partial", "x\nabcdefgh", 4, []line{{"x", 2, false}}, errPartial},
		{"crlf", "a\r\n", 4, []line{{"a\r", 3, false}}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := newLineReader(iotest.OneByteReader(strings.NewReader(tt.input)), tt.max)
			for i, want := range tt.want {
				got, n, tooLong, err := lr.next()
				if err != nil || string(got) != want.text || n != want.n || tooLong != want.tooLong {
					t.Fatalf("line %d: %q, %d, %v, %v; want %+v", i, got, n, tooLong, err, want)
				}
			}
			if _, _, _, err := lr.next(); !errors.Is(err, tt.end) {
				t.Fatalf("end: %v, want %v", err, tt.end)
			}
		})
	}
}

// A line far longer than the bufio buffer is assembled across reads, and
// one past the bound is discarded without being held.
func TestLineReaderLongLines(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	lr := newLineReader(strings.NewReader(long+"\n"+long+"y\nz\n"), len(long))
	got, n, tooLong, err := lr.next()
	if err != nil || string(got) != long || n != int64(len(long)+1) || tooLong {
		t.Fatalf("first: %d bytes, n %d, %v, %v", len(got), n, tooLong, err)
	}
	got, n, tooLong, err = lr.next()
	if err != nil || got != nil || n != int64(len(long)+2) || !tooLong {
		t.Fatalf("second: %d bytes, n %d, %v, %v", len(got), n, tooLong, err)
	}
	if got, _, _, err := lr.next(); err != nil || string(got) != "z" {
		t.Fatalf("third: %q, %v", got, err)
	}
}
