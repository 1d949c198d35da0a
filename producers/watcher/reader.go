package watcher

import (
	"bufio"
	"errors"
	"io"
)

// errPartial reports a last line without its newline: the writer has not
// finished it, so it is neither published nor skipped.
var errPartial = errors.New("partial last line")

// lineReader reads complete lines, holding at most max bytes of one.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next complete line without its newline and the number
// of bytes it spans, newline included. A line longer than max is read
// past but not kept: tooLong is set and line is nil. At the end of the
// data next returns io.EOF, or errPartial when a line is unfinished.
func (lr *lineReader) next() (line []byte, n int64, tooLong bool, err error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		n += int64(len(chunk))
		if !tooLong {
			if len(lr.buf)+len(chunk) > lr.max+1 {
				tooLong, lr.buf = true, lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, n, true, nil
			}
			return lr.buf[:len(lr.buf)-1], n, false, nil
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF) && n == 0:
			return nil, 0, false, io.EOF
		case errors.Is(err, io.EOF):
			return nil, n, tooLong, errPartial
		default:
			return nil, n, tooLong, err
		}
	}
}
