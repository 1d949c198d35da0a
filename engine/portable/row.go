package portable

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/clawmem/clawmem/schemas"
)

// idNamespace derives the id of a row that has none (or one that is not a
// UUID), so that importing the same file twice yields the same ids and
// --skip-existing can resume.
var idNamespace = uuid.MustParse("0b3c8f5e-7d2a-4c61-9e1f-5a4b2c9d8e70")

// MaxVectorDims bounds a row's vector; no embedding model comes near it.
const MaxVectorDims = 1 << 16

// DecodeRow turns one JSON row into a memory, accepting every shape the
// plugins wrote:
//
//   - clawmem and memory-lancedb-pro: {id, text, category, scope,
//     importance, timestamp, metadata[, vector]}; the plugin keeps metadata
//     as a JSON string, clawmem as an object — both are read.
//   - memory-lancedb: {id, text, vector, importance, category, createdAt},
//     no scope.
//
// A missing scope is global (scope, when set, overrides the row's); a
// missing importance 0.7; a missing category other. Timestamps may be epoch
// milliseconds, or ISO 8601 text. A row without an id, or with
// one that is not a UUID, gets an id derived from its content (the original
// is kept in metadata as legacyId), so the same file always maps to the
// same ids. Unknown fields are ignored. A vector is kept as it is; whether
// it fits the store is the importer's call.
func DecodeRow(raw []byte, scope string) (schemas.Memory, error) {
	var m schemas.Memory
	if !utf8.Valid(raw) {
		return m, rowError("the row is not valid UTF-8")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return m, rowError("a row must be a JSON object")
		}
		return m, rowError("malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if fields == nil {
		return m, rowError("a row must be a JSON object, not null")
	}
	var err error
	if m.Text, err = requiredString(fields, "text"); err != nil {
		return m, err
	}
	if err := schemas.ValidateText(m.Text); err != nil {
		return m, rowError("%v", err)
	}
	cat, _, err := optionalString(fields, "category")
	if err != nil {
		return m, err
	}
	if cat != "" {
		if m.Category, err = schemas.ParseCategory(cat); err != nil {
			return m, rowError("%v", err)
		}
	}
	rowScope, _, err := optionalString(fields, "scope")
	if err != nil {
		return m, err
	}
	m.Scope = scope
	if m.Scope == "" {
		m.Scope = rowScope
	}
	if m.Scope == "" {
		m.Scope = schemas.GlobalScope
	}
	if err := schemas.ValidateScope(m.Scope); err != nil {
		return m, rowError("%v", err)
	}
	if m.Importance, err = importance(fields); err != nil {
		return m, err
	}
	if m.Timestamp, err = timestamp(fields); err != nil {
		return m, err
	}
	if m.Metadata, err = metadata(fields); err != nil {
		return m, err
	}
	if m.Vector, err = vector(fields); err != nil {
		return m, err
	}
	if err := life(fields, &m); err != nil {
		return m, err
	}
	id, _, err := optionalString(fields, "id")
	if err != nil {
		return m, err
	}
	if m.ID, m.Metadata, err = rowID(id, m, m.Metadata); err != nil {
		return m, err
	}
	if m.SupersededBy == m.ID {
		return m, rowError("the memory is superseded by itself")
	}
	m.Normalize()
	if err := m.Validate(); err != nil {
		return m, rowError("%v", err)
	}
	return m, nil
}

func fieldValue(fields map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	v, ok := fields[name]
	if !ok || string(v) == "null" {
		return nil, false
	}
	return v, true
}

func optionalString(fields map[string]json.RawMessage, name string) (string, bool, error) {
	v, ok := fieldValue(fields, name)
	if !ok {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false, rowError("field %q must be a string, not %s", name, jsonKind(v))
	}
	return s, true, nil
}

func requiredString(fields map[string]json.RawMessage, name string) (string, error) {
	s, ok, err := optionalString(fields, name)
	if err == nil && !ok {
		err = rowError("field %q is missing", name)
	}
	return s, err
}

// jsonKind names the JSON type of a raw value for error messages.
func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func importance(fields map[string]json.RawMessage) (float64, error) {
	v, ok := fieldValue(fields, "importance")
	if !ok {
		return schemas.DefaultImportance, nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		if jsonKind(v) == "a number" {
			return 0, rowError("field \"importance\" is out of range")
		}
		return 0, rowError("field \"importance\" must be a number, not %s", jsonKind(v))
	}
	return schemas.ClampImportance(f), nil
}

// timestamp reads timestamp, else memory-lancedb's createdAt, as epoch ms.
// life reads a fact's life: supersededBy (a memory id), validFrom and
// invalidatedAt (times as timestamp accepts them). A row superseded by
// itself, or superseded without an end time, is refused.
func life(fields map[string]json.RawMessage, m *schemas.Memory) error {
	by, _, err := optionalString(fields, "supersededBy")
	if err != nil {
		return err
	}
	if by != "" && !schemas.IsUUID(by) {
		return rowError("field \"supersededBy\": %q is not a memory id", by)
	}
	m.SupersededBy = strings.ToLower(by)
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"validFrom", &m.ValidFrom}, {"invalidatedAt", &m.InvalidatedAt}} {
		v, ok := fieldValue(fields, f.name)
		if !ok {
			continue
		}
		if *f.dst, err = parseTime(v); err != nil {
			return rowError("field %q: %v", f.name, err)
		}
	}
	if m.SupersededBy != "" && m.InvalidatedAt == 0 {
		return rowError("supersededBy is set but invalidatedAt is not: when did it stop holding?")
	}
	return nil
}

func timestamp(fields map[string]json.RawMessage) (int64, error) {
	for _, name := range []string{"timestamp", "createdAt"} {
		v, ok := fieldValue(fields, name)
		if !ok {
			continue
		}
		ms, err := parseTime(v)
		if err != nil {
			return 0, rowError("field %q: %v", name, err)
		}
		return ms, nil
	}
	return 0, nil
}

// timeLayouts are the ISO 8601 forms accepted; those without a zone are UTC.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05", time.DateOnly}

func parseTime(v json.RawMessage) (int64, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		s = strings.TrimSpace(s)
		for _, layout := range timeLayouts {
			if t, err := time.Parse(layout, s); err == nil {
				return checkMillis(float64(t.UnixMilli()))
			}
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return checkMillis(f)
		}
		return 0, errors.New("want epoch milliseconds or an ISO 8601 date, not " + strconv.Quote(s))
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		return 0, errors.New("want a number or a date string, not " + jsonKind(v))
	}
	return checkMillis(f)
}

// maxMillis is the year 9999: later timestamps are garbage, and their
// ISO form would not round-trip.
const maxMillis = 253402300799999

func checkMillis(f float64) (int64, error) {
	if math.IsNaN(f) || f < 0 || f > maxMillis {
		return 0, errors.New("out of range: " + strconv.FormatFloat(f, 'g', -1, 64))
	}
	return int64(f), nil
}

// metadata accepts an object, or (as memory-lancedb-pro stores it) a string
// holding one. A string that is no JSON object is kept under "text".
func metadata(fields map[string]json.RawMessage) (json.RawMessage, error) {
	v, ok := fieldValue(fields, "metadata")
	if !ok {
		return nil, nil
	}
	v = bytes.TrimSpace(v)
	switch v[0] {
	case '{':
		return compact(v)
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, rowError("field \"metadata\": %v", err)
		}
		s = strings.TrimSpace(s)
		if s == "" || s == "null" {
			return nil, nil
		}
		if strings.HasPrefix(s, "{") && json.Valid([]byte(s)) {
			return compact([]byte(s))
		}
		return json.Marshal(map[string]string{"text": s})
	}
	return nil, rowError("field \"metadata\" must be an object (or a string holding one), not %s", jsonKind(v))
}

func compact(v []byte) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return nil, rowError("field \"metadata\": %v", err)
	}
	return b.Bytes(), nil
}

func vector(fields map[string]json.RawMessage) ([]float32, error) {
	v, ok := fieldValue(fields, "vector")
	if !ok {
		return nil, nil
	}
	return parseVector(v)
}

const errNotNumbers = "field \"vector\" must be an array of numbers"

// parseVector reads a JSON array of numbers straight into float32s. It is
// most of the work of reading a file with vectors, which encoding/json
// does three times slower. v is valid JSON: the row was decoded already.
func parseVector(v []byte) ([]float32, error) {
	v = bytes.TrimSpace(v)
	if len(v) < 2 || v[0] != '[' || v[len(v)-1] != ']' {
		return nil, rowError("%s", errNotNumbers)
	}
	inner := bytes.TrimSpace(v[1 : len(v)-1])
	if len(inner) == 0 {
		return nil, nil
	}
	n := bytes.Count(inner, []byte{','}) + 1
	if n > MaxVectorDims {
		return nil, rowError("field \"vector\" has %d components (max %d)", n, MaxVectorDims)
	}
	out := make([]float32, 0, n)
	for len(inner) > 0 {
		tok := inner
		if i := bytes.IndexByte(inner, ','); i >= 0 {
			tok, inner = inner[:i], inner[i+1:]
		} else {
			inner = nil
		}
		tok = bytes.TrimSpace(tok)
		// Inside valid JSON, a token starting so is a number; anything
		// else (a string, null, a nested array) is no vector.
		if len(tok) == 0 || tok[0] != '-' && (tok[0] < '0' || tok[0] > '9') {
			return nil, rowError("%s", errNotNumbers)
		}
		f, err := strconv.ParseFloat(string(tok), 32)
		if errors.Is(err, strconv.ErrRange) {
			return nil, rowError("field \"vector\": component %d is out of float32 range", len(out))
		}
		if err != nil {
			return nil, rowError("%s", errNotNumbers)
		}
		out = append(out, float32(f))
	}
	return out, nil
}

// rowID keeps a UUID id (lower-cased) and derives one otherwise.
func rowID(id string, m schemas.Memory, meta json.RawMessage) (string, json.RawMessage, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	if schemas.IsUUID(id) {
		return id, meta, nil
	}
	if id == "" {
		return DerivedID(m.Scope, m.Text, m.Timestamp), meta, nil
	}
	if len(id) > 256 {
		return "", nil, rowError("field \"id\" is %d chars long: neither a UUID nor a legacy id", len(id))
	}
	obj := map[string]any{}
	if len(meta) > 0 {
		if err := json.Unmarshal(meta, &obj); err != nil {
			return "", nil, rowError("field \"metadata\": %v", err)
		}
	}
	obj["legacyId"] = id
	meta, err := json.Marshal(obj)
	if err != nil {
		return "", nil, rowError("field \"metadata\": %v", err)
	}
	return uuid.NewSHA1(idNamespace, []byte("id\x00"+id)).String(), meta, nil
}

// DerivedID is the id a row without one gets: the same scope, text and
// timestamp always give the same id.
func DerivedID(scope, text string, ts int64) string {
	return uuid.NewSHA1(idNamespace, []byte(scope+"\x00"+text+"\x00"+strconv.FormatInt(ts, 10))).String()
}
