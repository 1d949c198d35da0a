package query

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/portable"
)

// fill sets every exported field v reaches to a value of its own (n
// counts them), so a wire field that reads the wrong engine field, or
// none, shows in the JSON.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(v.Index(0), n)
		fill(v.Index(1), n)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n)
		fill(e, n)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString(fmt.Sprint("s", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(uint64(*n))
	case reflect.Float64, reflect.Float32:
		v.SetFloat(float64(*n) + 0.5)
	}
}

func filled[T any]() T {
	var v T
	n := 0
	fill(reflect.ValueOf(&v).Elem(), &n)
	return v
}

func sameJSON(t *testing.T, what string, engine, wire any) {
	t.Helper()
	want, err := json.Marshal(engine)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(wire)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s: the wire's JSON differs from the engine's\n got %s\nwant %s", what, got, want)
	}
}

// TestDetailsKeepEngineJSON: the details built from the engine's results
// are byte for byte the JSON the engine's types make, which is what the
// replies carried before their shapes moved to package schemas.
func TestDetailsKeepEngineJSON(t *testing.T) {
	type engineStats struct {
		memory.Stats
		DeadLetters *int `json:"deadLetters,omitempty"`
	}
	st, dead := filled[memory.Stats](), 7
	sameJSON(t, "stats", engineStats{st, &dead}, statsDetails(st, &dead))
	sameJSON(t, "empty stats", engineStats{}, statsDetails(memory.Stats{}, nil))
	zeroParts := memory.Stats{EmbedderInfo: &embed.CacheStats{}, RecallCache: &memory.RecallCacheStats{}, Index: &engine.IndexState{}}
	sameJSON(t, "stats of empty parts", engineStats{Stats: zeroParts}, statsDetails(zeroParts, nil))

	rep := filled[memory.ConsolidateReport]()
	sameJSON(t, "consolidation", rep, consolidateDetails(rep))
	sameJSON(t, "empty consolidation", memory.ConsolidateReport{}, consolidateDetails(memory.ConsolidateReport{}))
	rep = memory.ConsolidateReport{Merges: []memory.Merge{{}}, Archived: []string{}}
	sameJSON(t, "consolidation of an empty merge", rep, consolidateDetails(rep))

	rs := filled[[]portable.Result]()
	sameJSON(t, "import results", rs, importResults(rs))
	sameJSON(t, "no import results", []portable.Result(nil), importResults(nil))
	sameJSON(t, "an empty import result", []portable.Result{{}}, importResults([]portable.Result{{}}))
}
