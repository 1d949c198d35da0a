package portable

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/schemas"
)

const testID = "5b0a1c1e-3f57-4f0e-8f4a-0d8c6f1b2a01"

func TestDecodeRow(t *testing.T) {
	iso := time.Date(2024, 7, 3, 9, 30, 0, 0, time.UTC).UnixMilli()
	cases := []struct {
		name, row, scope string
		want             schemas.Memory
	}{
		{"clawmem export", `{"id":"` + testID + `","text":"dark mode","category":"preference","scope":"agent:main","importance":0.8,"timestamp":1730000000000,"metadata":{"a":1}}`, "",
			schemas.Memory{ID: testID, Text: "dark mode", Category: "preference", Scope: "agent:main", Importance: 0.8, Timestamp: 1730000000000, Metadata: []byte(`{"a":1}`)}},
		{"pro: metadata as a string", `{"id":"` + testID + `","text":"t","category":"fact","scope":"global","importance":0.7,"timestamp":1,"metadata":"{\"source\": \"manual\"}"}`, "",
			schemas.Memory{ID: testID, Text: "t", Category: "fact", Scope: "global", Importance: 0.7, Timestamp: 1, Metadata: []byte(`{"source":"manual"}`)}},
		{"lancedb row: createdAt, no scope, vector kept", `{"id":"` + strings.ToUpper(testID) + `","text":"tabs","vector":[0.5,-1],"importance":0.9,"category":"preference","createdAt":1719800000000}`, "",
			schemas.Memory{ID: testID, Text: "tabs", Vector: []float32{0.5, -1}, Category: "preference", Scope: "global", Importance: 0.9, Timestamp: 1719800000000, Metadata: []byte(`{}`)}},
		{"ISO createdAt, defaults", `{"id":"` + testID + `","text":"x","createdAt":"2024-07-03T09:30:00.000Z"}`, "",
			schemas.Memory{ID: testID, Text: "x", Category: "other", Scope: "global", Importance: 0.7, Timestamp: iso, Metadata: []byte(`{}`)}},
		{"ISO date without zone is UTC", `{"id":"` + testID + `","text":"x","timestamp":"2024-07-03 09:30:00"}`, "",
			schemas.Memory{ID: testID, Text: "x", Category: "other", Scope: "global", Importance: 0.7, Timestamp: iso, Metadata: []byte(`{}`)}},
		{"timestamp wins over createdAt; numeric text", `{"id":"` + testID + `","text":"x","timestamp":"1700000000000","createdAt":5}`, "",
			schemas.Memory{ID: testID, Text: "x", Category: "other", Scope: "global", Importance: 0.7, Timestamp: 1700000000000, Metadata: []byte(`{}`)}},
		{"scope override", `{"id":"` + testID + `","text":"x","scope":"agent:a"}`, "custom:import",
			schemas.Memory{ID: testID, Text: "x", Category: "other", Scope: "custom:import", Importance: 0.7, Metadata: []byte(`{}`)}},
		{"override hides a bad scope", `{"id":"` + testID + `","text":"x","scope":"bad scope!"}`, "global",
			schemas.Memory{ID: testID, Text: "x", Category: "other", Scope: "global", Importance: 0.7, Metadata: []byte(`{}`)}},
		{"nulls are absent, importance clamped, category case", `{"id":"` + testID + `","text":"x","scope":null,"metadata":null,"vector":null,"importance":7,"category":"FACT"}`, "",
			schemas.Memory{ID: testID, Text: "x", Category: "fact", Scope: "global", Importance: 1, Metadata: []byte(`{}`)}},
		{"metadata string that is no object", `{"id":"` + testID + `","text":"x","metadata":"from the old plugin"}`, "",
			schemas.Memory{ID: testID, Text: "x", Category: "other", Scope: "global", Importance: 0.7, Metadata: []byte(`{"text":"from the old plugin"}`)}},
		{"unknown fields ignored", `{"id":"` + testID + `","text":"x","_distance":0.3,"score":1}`, "",
			schemas.Memory{ID: testID, Text: "x", Category: "other", Scope: "global", Importance: 0.7, Metadata: []byte(`{}`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeRow([]byte(c.row), c.scope)
			if err != nil {
				t.Fatal(err)
			}
			if !sameMemory(got, c.want) {
				t.Fatalf("got  %+v (meta %s)\nwant %+v (meta %s)", got, got.Metadata, c.want, c.want.Metadata)
			}
		})
	}
}

func sameMemory(a, b schemas.Memory) bool {
	if a.ID != b.ID || a.Text != b.Text || a.Category != b.Category || a.Scope != b.Scope || a.Importance != b.Importance ||
		a.Timestamp != b.Timestamp || string(a.Metadata) != string(b.Metadata) || len(a.Vector) != len(b.Vector) {
		return false
	}
	for i := range a.Vector {
		if a.Vector[i] != b.Vector[i] {
			return false
		}
	}
	return true
}

func TestDecodeRowDerivesIDs(t *testing.T) {
	a, err := DecodeRow([]byte(`{"text":"no id here","timestamp":1730000000000}`), "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := DecodeRow([]byte(`{"text":"no id here","timestamp":1730000000000}`), "")
	c, _ := DecodeRow([]byte(`{"text":"no id here","timestamp":1730000000001}`), "")
	if !schemas.IsUUID(a.ID) || a.ID != b.ID || a.ID == c.ID {
		t.Fatalf("derived ids %s %s %s: want stable and content-dependent", a.ID, b.ID, c.ID)
	}
	legacy, err := DecodeRow([]byte(`{"id":"mem-42","text":"x","metadata":{"k":"v"}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := DecodeRow([]byte(`{"id":"mem-42","text":"other text"}`), "")
	if !schemas.IsUUID(legacy.ID) || legacy.ID != again.ID || string(legacy.Metadata) != `{"k":"v","legacyId":"mem-42"}` {
		t.Fatalf("legacy id: %s %s %s", legacy.ID, again.ID, legacy.Metadata)
	}
}

func TestDecodeRowFailures(t *testing.T) {
	cases := []struct{ name, row, want string }{
		{"malformed", `{"text":"x"`, "malformed JSON"},
		{"not an object", `["x"]`, "must be a JSON object"},
		{"null", `null`, "not null"},
		{"no text", `{"id":"` + testID + `"}`, `"text" is missing`},
		{"text not a string", `{"text":5}`, `"text" must be a string, not a number`},
		{"blank text", `{"text":"   "}`, "text is empty"},
		{"NUL in text", `{"text":"a\u0000b"}`, "NUL"},
		{"oversize text", `{"text":"` + strings.Repeat("a", schemas.MaxTextBytes+1) + `"}`, "max 65536"},
		{"invalid UTF-8", "{\"text\":\"caf\xe9\"}", "not valid UTF-8"},
		{"bad scope", `{"text":"x","scope":"no spaces allowed"}`, "scope"},
		{"scope not a string", `{"text":"x","scope":1}`, `"scope" must be a string`},
		{"bad category", `{"text":"x","category":"misc"}`, `category "misc"`},
		{"importance a string", `{"text":"x","importance":"high"}`, `"importance" must be a number, not a string`},
		{"importance out of range", `{"text":"x","importance":1e999}`, "out of range"},
		{"timestamp garbage", `{"text":"x","timestamp":"yesterday"}`, `"timestamp": want epoch milliseconds`},
		{"timestamp negative", `{"text":"x","createdAt":-5}`, "out of range"},
		{"timestamp an object", `{"text":"x","timestamp":{}}`, "not an object"},
		{"metadata an array", `{"text":"x","metadata":[1]}`, `"metadata" must be an object`},
		{"oversize metadata", `{"text":"x","metadata":{"k":"` + strings.Repeat("m", schemas.MaxMetadataBytes) + `"}}`, "metadata is"},
		{"vector of strings", `{"text":"x","vector":["a"]}`, `"vector" must be an array of numbers`},
		{"vector beyond float32", `{"text":"x","vector":[1e300]}`, "float32 range"},
		{"id a number", `{"id":7,"text":"x"}`, `"id" must be a string`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeRow([]byte(c.row), "")
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrRow) || !errors.Is(err, schemas.ErrInvalid) {
				t.Fatalf("%v does not match ErrRow and ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q lacks %q", err, c.want)
			}
			if strings.Contains(err.Error(), "invalid input") {
				t.Fatalf("error %q keeps the invalid input prefix", err)
			}
		})
	}
}

func TestParseVector(t *testing.T) {
	cases := []struct {
		in   string
		want []float32
		err  string
	}{
		{"[1, 2.5e-3 , -0,3E2]", []float32{1, 0.0025, 0, 300}, ""},
		{" [ ] ", nil, ""},
		{"[0.1]", []float32{0.1}, ""},
		{"[1e-50]", []float32{0}, ""},
		{`[1,"a"]`, nil, "must be an array of numbers"},
		{"[[1,2]]", nil, "must be an array of numbers"},
		{"[true]", nil, "must be an array of numbers"},
		{"[null]", nil, "must be an array of numbers"},
		{`{"a":1}`, nil, "must be an array of numbers"},
		{`"1,2"`, nil, "must be an array of numbers"},
		{"[1e39]", nil, "component 0 is out of float32 range"},
		{"[1,-1e40]", nil, "component 1 is out of float32 range"},
	}
	for _, c := range cases {
		got, err := parseVector([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || len(got) != len(c.want) {
			t.Errorf("%s: %v %v", c.in, got, err)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: %v, want %v", c.in, got, c.want)
			}
		}
	}
}
