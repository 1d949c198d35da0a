package portable

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// ReadOptions tune a Reader.
type ReadOptions struct {
	// Scope, when set, replaces every row's own scope.
	Scope string
}

// Header is what a JSON export document says about itself.
type Header struct {
	Version    string `json:"version,omitempty"`
	ExportedAt string `json:"exportedAt,omitempty"`
	// Count is the document's count field; -1 when it has none.
	Count int `json:"count"`
}

// docKeys are the top-level keys of memory-lancedb-pro's export document;
// a file whose first object starts with one is a document, not JSONL.
var docKeys = []string{"version", "exportedAt", "count", "filters", "memories"}

type docState int

const (
	stStart docState = iota
	stObject
	stMemories
	stArray
	stTrailer
	stDone
)

var bom = []byte("\xef\xbb\xbf")

// Reader reads memories from any supported file, detecting the format from
// the first bytes. Rows that cannot be used come back as Records with Err
// set and the line they start on, and reading goes on; only an I/O error
// ends it early. A JSON document that stops being JSON halfway is one
// failed row at that line, after which nothing more can be read.
type Reader struct {
	src    *lineIndex
	br     *bufio.Reader
	scope  string
	format Format
	// base is the bytes before the JSON text (a byte order mark).
	base int64

	line     int   // JSONL: lines read
	consumed int64 // JSONL: bytes read
	lineBuf  []byte

	dec    *json.Decoder
	gap    *gapReader
	state  docState
	header Header
}

// NewReader reads from r.
func NewReader(r io.Reader, o ReadOptions) *Reader {
	src := &lineIndex{r: r}
	return &Reader{src: src, br: bufio.NewReaderSize(src, 64<<10), scope: o.Scope, header: Header{Count: -1}}
}

// Format detects (on first use) and returns the file's format. An empty
// file is JSONL with no rows.
func (r *Reader) Format() (Format, error) {
	if r.format != "" {
		return r.format, nil
	}
	if b, err := r.br.Peek(len(bom)); err == nil && bytes.Equal(b, bom) {
		r.br.Discard(len(bom))
		r.base = int64(len(bom))
	}
	f := JSONL
	for n := 256; ; n *= 2 {
		b, err := r.br.Peek(n)
		if got, ok := detect(b); ok {
			f = got
			break
		}
		if err != nil || n >= 64<<10 {
			if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
				return "", err
			}
			break
		}
	}
	r.format = f
	if f == JSONL {
		r.src.stop()
	} else {
		r.gap = &gapReader{r: r.br}
		r.dec = json.NewDecoder(r.gap)
	}
	return f, nil
}

// detect decides the format from a file's first bytes; ok is false when b
// is too short to tell.
func detect(b []byte) (Format, bool) {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return "", false
	}
	switch b[0] {
	case '[':
		return JSONArray, true
	case '{':
	default:
		return JSONL, true
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	if len(b) == 0 {
		return "", false
	}
	if b[0] != '"' {
		return JSONL, true
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 {
		return "", false
	}
	if slices.Contains(docKeys, string(b[1:1+end])) {
		return JSON, true
	}
	return JSONL, true
}

// Header returns the JSON document's own fields, read so far.
func (r *Reader) Header() Header { return r.header }

// Offset is how many bytes of the file have been read into rows, for
// progress reports.
func (r *Reader) Offset() int64 {
	if r.dec != nil {
		return r.base + r.dec.InputOffset()
	}
	return r.base + r.consumed
}

// Next returns the next row, io.EOF after the last, or an I/O error.
func (r *Reader) Next() (Record, error) {
	f, err := r.Format()
	if err != nil {
		return Record{}, err
	}
	if f == JSONL {
		return r.nextLine()
	}
	return r.nextJSON()
}

func (r *Reader) nextLine() (Record, error) {
	for {
		line, tooLong, err := r.readLine()
		if err != nil && !errors.Is(err, io.EOF) {
			return Record{}, err
		}
		if len(line) == 0 && !tooLong && err != nil {
			return Record{}, io.EOF
		}
		r.line++
		if tooLong {
			return Record{Line: r.line, Err: rowError("the line is longer than %d bytes", MaxLineBytes)}, nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		m, rerr := DecodeRow(line, r.scope)
		return Record{Line: r.line, Memory: m, Err: rerr}, nil
	}
}

// readLine returns the next line; a line over MaxLineBytes is skipped and
// reported as tooLong. err is io.EOF for a last line without a newline.
func (r *Reader) readLine() (line []byte, tooLong bool, err error) {
	r.lineBuf = r.lineBuf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.consumed += int64(len(chunk))
		if !tooLong {
			if len(r.lineBuf)+len(chunk) > MaxLineBytes {
				tooLong, r.lineBuf = true, r.lineBuf[:0]
			} else if errors.Is(err, bufio.ErrBufferFull) || len(r.lineBuf) > 0 {
				r.lineBuf = append(r.lineBuf, chunk...)
			} else {
				// The common case: the whole line sat in the buffer.
				return chunk, false, err
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(r.lineBuf) > MaxLineBytes/2 {
			// Do not keep a huge buffer alive for the rest of the file.
			defer func() { r.lineBuf = nil }()
		}
		return r.lineBuf, tooLong, err
	}
}

// nextJSON reads the next element of a JSON document. Each step that gets
// past a token or value moves the gap reader's mark, so that the decoder,
// which buffers everything from the last value it returned, never holds
// more than maxJSONGap bytes.
func (r *Reader) nextJSON() (Record, error) {
	defer func() { r.gap.mark = r.dec.InputOffset() }()
	for {
		r.gap.mark = r.dec.InputOffset()
		r.lineAt(r.gap.mark)
		switch r.state {
		case stStart:
			tok, err := r.dec.Token()
			if err != nil {
				return r.jsonFailure(err)
			}
			if tok == json.Delim('[') {
				r.state = stArray
			} else {
				r.state = stObject
			}
		case stObject:
			if !r.dec.More() {
				if _, err := r.dec.Token(); err != nil {
					return r.jsonFailure(err)
				}
				r.state = stTrailer
				continue
			}
			tok, err := r.dec.Token()
			if err != nil {
				return r.jsonFailure(err)
			}
			key, _ := tok.(string)
			r.gap.mark = r.dec.InputOffset()
			if key == "memories" {
				tok, err := r.dec.Token()
				if err != nil {
					return r.jsonFailure(err)
				}
				if tok != json.Delim('[') {
					r.state = stDone
					return Record{Line: r.lineAt(r.dec.InputOffset()), Err: rowError("the document's \"memories\" must be an array")}, nil
				}
				r.state = stMemories
				continue
			}
			var v json.RawMessage
			if err := r.dec.Decode(&v); err != nil {
				return r.jsonFailure(err)
			}
			r.headerField(key, v)
		case stMemories, stArray:
			if !r.dec.More() {
				if _, err := r.dec.Token(); err != nil {
					return r.jsonFailure(err)
				}
				if r.state == stArray {
					r.state = stTrailer
				} else {
					r.state = stObject
				}
				continue
			}
			var raw json.RawMessage
			if err := r.dec.Decode(&raw); err != nil {
				return r.jsonFailure(err)
			}
			line := r.lineAt(r.dec.InputOffset() - int64(len(raw)))
			if len(raw) > MaxLineBytes {
				return Record{Line: line, Err: rowError("the row is longer than %d bytes", MaxLineBytes)}, nil
			}
			m, err := DecodeRow(raw, r.scope)
			return Record{Line: line, Memory: m, Err: err}, nil
		case stTrailer:
			_, err := r.dec.Token()
			if errors.Is(err, io.EOF) {
				r.state = stDone
				return Record{}, io.EOF
			}
			if err != nil {
				return r.jsonFailure(err)
			}
			r.state = stDone
			return Record{Line: r.lineAt(r.dec.InputOffset()), Err: rowError("unexpected data after the JSON document")}, nil
		case stDone:
			return Record{}, io.EOF
		}
	}
}

// jsonFailure turns a decoding error into a failed row where the JSON
// broke; nothing after it can be read. I/O errors stay errors.
func (r *Reader) jsonFailure(err error) (Record, error) {
	r.state = stDone
	if errors.Is(err, errGap) {
		at := r.base + r.gap.mark
		line := r.src.lineAt(at)
		return Record{Line: line, Err: rowError("no JSON value ends within %d bytes after byte offset %d (line %d): "+
			"a row longer than that, or a run of whitespace or garbage; the rest of the file cannot be read", maxJSONGap, at, line)}, nil
	}
	if syn, ok := errors.AsType[*json.SyntaxError](err); ok {
		return Record{Line: r.lineAt(syn.Offset), Err: rowError("malformed JSON (%s); the rest of the file cannot be read", syn.Error())}, nil
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		// The file's last line: where the JSON was cut off.
		return Record{Line: r.src.lineAt(max(r.src.off-1, 0)), Err: rowError("the file ends inside the JSON document")}, nil
	}
	return Record{}, err
}

func (r *Reader) headerField(key string, v json.RawMessage) {
	switch key {
	case "version":
		_ = json.Unmarshal(v, &r.header.Version)
	case "exportedAt":
		if json.Unmarshal(v, &r.header.ExportedAt) != nil {
			r.header.ExportedAt = string(v)
		}
	case "count":
		var n int
		if json.Unmarshal(v, &n) == nil {
			r.header.Count = n
		}
	}
}

// lineAt is the line of the byte at decoder offset off. Offsets must not
// decrease from one call to the next.
func (r *Reader) lineAt(off int64) int { return r.src.lineAt(r.base + off) }

// maxJSONGap bounds the bytes between two consecutive tokens or values of
// a JSON document: room for a row of MaxLineBytes (which is then failed on
// its own and reading goes on) and the whitespace around it. Without it
// json.Decoder keeps every byte of a whitespace run or an endless value in
// memory: "[" and 300 MB of spaces took 1.4 GB.
const maxJSONGap = MaxLineBytes + 1<<20

// errGap ends a JSON document's reading at a run longer than maxJSONGap.
var errGap = errors.New("no JSON value ends within the limit")

// gapReader feeds the JSON decoder at most maxJSONGap bytes past mark, the
// decoder's offset after the last token or value the Reader took.
type gapReader struct {
	r    io.Reader
	pos  int64
	mark int64
}

func (g *gapReader) Read(p []byte) (int, error) {
	room := g.mark + maxJSONGap - g.pos
	if room <= 0 {
		return 0, errGap
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := g.r.Read(p)
	g.pos += int64(n)
	return n, err
}

// lineIndex keeps what passed through it since the last offset asked
// about, to count the newlines up to the next: at most what the JSON
// decoder may hold plus one buffer, a byte per byte whatever the bytes.
// A JSONL file counts its own lines and turns it off.
type lineIndex struct {
	r       io.Reader
	off     int64 // bytes read
	start   int64 // offset of pending[0]
	pending []byte
	lines   int // newlines before start
	stopped bool
}

func (l *lineIndex) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if !l.stopped {
		l.pending = append(l.pending, p[:n]...)
	}
	l.off += int64(n)
	return n, err
}

// stop forgets the bytes kept and keeps no more.
func (l *lineIndex) stop() { l.stopped, l.pending = true, nil }

func (l *lineIndex) lineAt(off int64) int {
	n := int(min(max(off-l.start, 0), int64(len(l.pending))))
	l.lines += bytes.Count(l.pending[:n], []byte{'\n'})
	l.start += int64(n)
	l.pending = l.pending[n:]
	return l.lines + 1
}

// Describe names a format for messages.
func (f Format) Describe() string {
	switch f {
	case JSON:
		return "JSON export document"
	case JSONArray:
		return "JSON array of rows"
	case JSONL:
		return "JSONL"
	}
	return fmt.Sprintf("format %q", string(f))
}
