//go:build lancedb

package lancestore

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/clawmem/clawmem/schemas"
)

// arrowSchema is cols as an Arrow schema. Every column is nullable, as in
// the tables memory-lancedb-pro's JavaScript writer creates.
func arrowSchema(cols []column) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		var t arrow.DataType
		switch c.kind {
		case kindString:
			t = arrow.BinaryTypes.String
		case kindFloat:
			t = arrow.PrimitiveTypes.Float64
		case kindInt:
			t = arrow.PrimitiveTypes.Int64
		case kindVector:
			t = arrow.FixedSizeListOf(int32(c.dim), arrow.PrimitiveTypes.Float32)
		default:
			return nil, fmt.Errorf("column %s has no Arrow type", c.name)
		}
		fields[i] = arrow.Field{Name: c.name, Type: t, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// columnsOf reads a table's Arrow schema. Only the types lancedb-go can
// return as JSON get a kind; any other is kindOther.
func columnsOf(s *arrow.Schema) []column {
	cols := make([]column, 0, s.NumFields())
	for _, f := range s.Fields() {
		c := column{name: f.Name}
		switch f.Type.ID() {
		case arrow.STRING:
			c.kind = kindString
		case arrow.FLOAT32, arrow.FLOAT64:
			c.kind = kindFloat
		case arrow.INT32, arrow.INT64:
			c.kind = kindInt
		case arrow.FIXED_SIZE_LIST:
			if t := f.Type.(*arrow.FixedSizeListType); t.Elem().ID() == arrow.FLOAT32 {
				c.kind, c.dim = kindVector, int(t.Len())
			}
		}
		cols = append(cols, c)
	}
	return cols
}

// record builds ms as rows of schema, the table's own: a table the plugin
// created, whatever its number types, takes them as they are. The caller
// releases the record.
func record(schema *arrow.Schema, ms []schemas.Memory) (arrow.Record, error) {
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	for i, f := range schema.Fields() {
		for _, m := range ms {
			if err := appendField(b.Field(i), f, m); err != nil {
				return nil, err
			}
		}
	}
	return b.NewRecord(), nil
}

func appendField(b array.Builder, f arrow.Field, m schemas.Memory) error {
	switch f.Name {
	case "id":
		return appendString(b, f, m.ID)
	case "text":
		return appendString(b, f, m.Text)
	case "category":
		return appendString(b, f, string(m.Category))
	case "scope":
		return appendString(b, f, m.Scope)
	case "metadata":
		return appendString(b, f, string(m.Metadata))
	case "importance":
		return appendNumber(b, f, m.Importance, 0)
	case "timestamp", "createdAt":
		return appendNumber(b, f, float64(m.Timestamp), m.Timestamp)
	case "vector":
		return appendVector(b, f, m.Vector)
	}
	if !f.Nullable {
		return fmt.Errorf("the %s table has a required column %q that clawmem cannot fill", TableName, f.Name)
	}
	b.AppendNull()
	return nil
}

func appendString(b array.Builder, f arrow.Field, s string) error {
	sb, ok := b.(*array.StringBuilder)
	if !ok {
		return typeError(f)
	}
	sb.Append(s)
	return nil
}

// appendNumber appends v, or i to an integer column (exact for
// timestamps).
func appendNumber(b array.Builder, f arrow.Field, v float64, i int64) error {
	switch nb := b.(type) {
	case *array.Float64Builder:
		nb.Append(v)
	case *array.Float32Builder:
		nb.Append(float32(v))
	case *array.Int64Builder:
		nb.Append(i)
	case *array.Int32Builder:
		nb.Append(int32(i))
	default:
		return typeError(f)
	}
	return nil
}

func appendVector(b array.Builder, f arrow.Field, v []float32) error {
	lb, ok := b.(*array.FixedSizeListBuilder)
	if !ok {
		return typeError(f)
	}
	vb, ok := lb.ValueBuilder().(*array.Float32Builder)
	if !ok {
		return typeError(f)
	}
	lb.Append(true)
	vb.AppendValues(v, nil)
	return nil
}

func typeError(f arrow.Field) error {
	return fmt.Errorf("the %s table's column %s has type %s, which clawmem does not write", TableName, f.Name, f.Type)
}
