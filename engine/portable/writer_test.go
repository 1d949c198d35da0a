package portable

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/schemas"
)

func sampleMemories() []schemas.Memory {
	return []schemas.Memory{
		{ID: testID, Text: "dark mode \"everywhere\"\n\ttabs\\spaces \u2028 <b>&</b> \x01", Category: "preference", Scope: "global",
			Importance: 0.8, Timestamp: 1730000000000, Metadata: []byte("{\n  \"source\": \"manual\"\n}"), Vector: []float32{0.1, -2.5e-7, 3}},
		{ID: "5b0a1c1e-3f57-4f0e-8f4a-0d8c6f1b2a02", Text: "我最喜欢喝乌龙茶 🍵", Category: "fact", Scope: "agent:main", Importance: 0,
			Timestamp: 1, Vector: []float32{1, 0, 0}},
	}
}

func TestWriterJSONL(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range sampleMemories() {
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 || w.Count() != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	want := `{"id":"` + testID + `","text":"dark mode \"everywhere\"\n\ttabs\\spaces \u2028 <b>&</b> \u0001","category":"preference","scope":"global","importance":0.8,"timestamp":1730000000000,"metadata":{"source":"manual"}}`
	if lines[0] != want {
		t.Fatalf("line 1:\n%s\nwant\n%s", lines[0], want)
	}
	// Each line is what encoding/json reads back as the memory, metadata {} when there was none.
	for i, line := range lines {
		var m schemas.Memory
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		orig := sampleMemories()[i]
		if m.Text != orig.Text || m.ID != orig.ID || m.Timestamp != orig.Timestamp || m.Vector != nil {
			t.Fatalf("line %d decodes to %+v", i+1, m)
		}
	}
	if !strings.HasSuffix(lines[1], `"metadata":{}}`) {
		t.Fatalf("empty metadata: %s", lines[1])
	}
}

func TestWriterDocumentRoundTrip(t *testing.T) {
	for _, vectors := range []bool{false, true} {
		var buf bytes.Buffer
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		w, err := NewWriter(&buf, WriterOptions{Format: JSON, WithVectors: vectors, Filters: map[string]string{"scope": "global"}, ExportedAt: at})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range sampleMemories() {
			if err := w.Write(m); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Version    string            `json:"version"`
			ExportedAt string            `json:"exportedAt"`
			Count      int               `json:"count"`
			Filters    map[string]string `json:"filters"`
			Memories   []json.RawMessage `json:"memories"`
		}
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, buf.String())
		}
		if doc.Version != "1.0" || doc.ExportedAt != "2026-03-01T12:00:00.000Z" || doc.Count != 2 || doc.Filters["scope"] != "global" || len(doc.Memories) != 2 {
			t.Fatalf("document %+v", doc)
		}
		f, recs := readAll(t, buf.Bytes(), ReadOptions{})
		if f != JSON || len(recs) != 2 {
			t.Fatalf("read back %s, %d rows", f, len(recs))
		}
		for i, r := range recs {
			want := sampleMemories()[i]
			want.Metadata = compactOrEmpty(want.Metadata)
			if !vectors {
				want.Vector = nil
			}
			if r.Err != nil || !sameMemory(r.Memory, want) {
				t.Fatalf("vectors=%v row %d: %+v %v\nwant %+v", vectors, i, r.Memory, r.Err, want)
			}
		}
	}
}

func compactOrEmpty(raw []byte) []byte {
	if len(raw) == 0 {
		return []byte("{}")
	}
	var b bytes.Buffer
	json.Compact(&b, raw)
	return b.Bytes()
}

func TestWriterEmptyDocument(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, WriterOptions{Format: JSON})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil || doc["count"] != float64(0) {
		t.Fatalf("%v %s", err, buf.String())
	}
	if _, err := NewWriter(&buf, WriterOptions{Format: JSONArray}); err == nil {
		t.Fatal("writing a JSON array should be refused")
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": JSONL, "jsonl": JSONL, "json": JSON} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("%q: %s %v", in, got, err)
		}
	}
	if _, err := ParseFormat("csv"); err == nil {
		t.Error("csv accepted")
	}
}
