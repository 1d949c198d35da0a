package portable

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/clawmem/clawmem/schemas"
)

// WriterOptions tune a Writer.
type WriterOptions struct {
	// Format is JSONL (the default) or JSON.
	Format Format
	// WithVectors adds each memory's vector; without it the file is what the
	// seed's backups hold, and importing it re-embeds.
	WithVectors bool
	// Filters is recorded in the JSON document's filters object.
	Filters map[string]string
	// ExportedAt is the JSON document's exportedAt; zero means now.
	ExportedAt time.Time
}

// Writer writes memories in clawmem's JSONL (one memory per line:
// {id,text,category,scope,importance,timestamp,metadata[,vector]}) or as
// memory-lancedb-pro's export document. It streams, holding at most
// encodeBatch rows, so an export of any size runs in constant memory. The
// document's count, known only at the end, is its last field.
type Writer struct {
	w       *bufio.Writer
	o       WriterOptions
	n       int // rows written (or pending)
	flushed int // rows encoded into w
	pending []schemas.Memory
	bufs    [][]byte
	begun   bool
}

// encodeBatch is how many rows are encoded together. Printing a vector's
// floats is most of an export's work (about 20 µs for 384 of them), so
// rows with vectors are encoded on every core, a batch at a time.
const encodeBatch = 512

// NewWriter writes to w; Close finishes the file.
func NewWriter(w io.Writer, o WriterOptions) (*Writer, error) {
	if o.Format == "" {
		o.Format = JSONL
	}
	if o.Format != JSONL && o.Format != JSON {
		return nil, fmt.Errorf("%w: cannot write %s (want jsonl or json)", schemas.ErrInvalid, o.Format.Describe())
	}
	return &Writer{w: bufio.NewWriterSize(w, 256<<10), o: o}, nil
}

// Count is how many memories were written.
func (w *Writer) Count() int { return w.n }

func (w *Writer) begin() error {
	if w.begun || w.o.Format != JSON {
		w.begun = true
		return nil
	}
	w.begun = true
	at := w.o.ExportedAt
	if at.IsZero() {
		at = time.Now()
	}
	filters := w.o.Filters
	if filters == nil {
		filters = map[string]string{}
	}
	fb, err := json.Marshal(filters)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w.w, "{\n  \"version\": %q,\n  \"exportedAt\": %q,\n  \"filters\": %s,\n  \"memories\": [",
		DocumentVersion, at.UTC().Format("2006-01-02T15:04:05.000Z"), fb)
	return err
}

// Write adds one memory. The memory must not change afterwards: it may be
// encoded later, on Close at the latest.
func (w *Writer) Write(m schemas.Memory) error {
	w.pending = append(w.pending, m)
	w.n++
	if len(w.pending) < encodeBatch {
		return nil
	}
	return w.flush()
}

// flush encodes the pending rows, in parallel when they carry vectors, and
// writes them in order.
func (w *Writer) flush() error {
	if err := w.begin(); err != nil {
		return err
	}
	parts := 1
	if w.o.WithVectors {
		parts = max(1, min(runtime.GOMAXPROCS(0), len(w.pending)/64))
	}
	for len(w.bufs) < parts {
		w.bufs = append(w.bufs, nil)
	}
	per := (len(w.pending) + parts - 1) / parts
	encode := func(p int) {
		b := w.bufs[p][:0]
		for i := p * per; i < min((p+1)*per, len(w.pending)); i++ {
			if w.o.Format == JSON {
				if w.flushed+i > 0 {
					b = append(b, ',')
				}
				b = append(b, "\n    "...)
			}
			b = AppendRow(b, w.pending[i], w.o.WithVectors)
			if w.o.Format == JSONL {
				b = append(b, '\n')
			}
		}
		w.bufs[p] = b
	}
	if parts == 1 {
		encode(0)
	} else {
		var wg sync.WaitGroup
		for p := range parts {
			wg.Go(func() { encode(p) })
		}
		wg.Wait()
	}
	w.flushed += len(w.pending)
	clear(w.pending)
	w.pending = w.pending[:0]
	for _, b := range w.bufs[:parts] {
		if _, err := w.w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// Close finishes the document and flushes; it does not close the
// underlying writer.
func (w *Writer) Close() error {
	if err := w.flush(); err != nil {
		return err
	}
	if w.o.Format == JSON {
		end := "\n  ],\n"
		if w.n == 0 {
			end = "],\n"
		}
		if _, err := fmt.Fprintf(w.w, "%s  \"count\": %d\n}\n", end, w.n); err != nil {
			return err
		}
	}
	return w.w.Flush()
}

// AppendRow appends m as one compact JSON object in export order. Metadata
// goes out compacted, so a row is always one line.
func AppendRow(b []byte, m schemas.Memory, withVector bool) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, m.ID)
	b = append(b, `,"text":`...)
	b = appendString(b, m.Text)
	b = append(b, `,"category":`...)
	b = appendString(b, string(m.Category))
	b = append(b, `,"scope":`...)
	b = appendString(b, m.Scope)
	b = append(b, `,"importance":`...)
	b = strconv.AppendFloat(b, m.Importance, 'g', -1, 64)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, m.Timestamp, 10)
	b = append(b, `,"metadata":`...)
	b = appendMetadata(b, m.Metadata)
	if m.SupersededBy != "" {
		b = append(b, `,"supersededBy":`...)
		b = appendString(b, m.SupersededBy)
	}
	if m.ValidFrom != 0 {
		b = append(b, `,"validFrom":`...)
		b = strconv.AppendInt(b, m.ValidFrom, 10)
	}
	if m.InvalidatedAt != 0 {
		b = append(b, `,"invalidatedAt":`...)
		b = strconv.AppendInt(b, m.InvalidatedAt, 10)
	}
	if withVector && len(m.Vector) > 0 {
		b = append(b, `,"vector":[`...)
		for i, x := range m.Vector {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendMetadata(b, meta []byte) []byte {
	meta = bytes.TrimSpace(meta)
	if len(meta) == 0 || string(meta) == "null" {
		return append(b, "{}"...)
	}
	if meta[0] == '{' && bytes.ContainsAny(meta, "\n\r") {
		var c bytes.Buffer
		if json.Compact(&c, meta) == nil {
			return append(b, c.Bytes()...)
		}
	}
	if meta[0] != '{' || !json.Valid(meta) {
		// A store never holds metadata that is no JSON object; if one did,
		// the row must still be one, so the bytes go out as a string.
		b = append(b, `{"text":`...)
		return append(appendString(b, string(meta)), '}')
	}
	return append(b, meta...)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaping what JSON requires plus
// U+2028 and U+2029 (which break JavaScript readers); invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
