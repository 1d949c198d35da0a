package chaos

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestParseGauges(t *testing.T) {
	page := `# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 823
go_gc_duration_seconds{quantile="0.5"} 0.0001
go_memstats_heap_inuse_bytes 3.9206912e+07
go_memstats_heap_idle_bytes NaNish
go_memstats_sys_bytes
`
	for _, tc := range []struct {
		name string
		want float64
		ok   bool
	}{
		{"go_goroutines", 823, true},
		{"go_memstats_heap_inuse_bytes", 39206912, true},
		{"go_memstats_heap_idle_bytes", 0, false}, // not a number
		{"go_memstats_sys_bytes", 0, false},       // no value
		{"go_gc_duration_seconds", 0, false},      // labelled
		{"process_resident_memory_bytes", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := parseGauges(strings.NewReader(page), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := g[tc.name]
			if ok != tc.ok || got != tc.want {
				t.Fatalf("%s = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// Any page parses without panicking, yields only the names asked for,
// and a sample line added to it is read back.
func FuzzParseGauges(f *testing.F) {
	f.Add("go_goroutines 12\n# TYPE x gauge\n", 42.5)
	f.Add("go_goroutines", 1e300)
	f.Add("\x00\xff go_goroutines 1 2\n", -3.0)
	f.Fuzz(func(t *testing.T, page string, v float64) {
		if math.IsNaN(v) {
			return
		}
		page = strings.ReplaceAll(page, "go_goroutines", "other")
		g, err := parseGauges(strings.NewReader(page+"\n"+fmt.Sprintf("go_goroutines %v\n", v)), "go_goroutines")
		if err != nil {
			return // a line past the scanner's limit
		}
		if len(g) != 1 || g["go_goroutines"] != v {
			t.Fatalf("got %v, want go_goroutines %v", g, v)
		}
	})
}

func TestLastLines(t *testing.T) {
	for _, tc := range []struct {
		out  string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"", 3, ""},
		{"only\n", 1, "only"},
	} {
		u := &Up{logs: &tail{max: 1 << 10}}
		u.logs.Write([]byte(tc.out))
		if got := u.LastLines(tc.n); got != tc.want {
			t.Errorf("LastLines(%q, %d) = %q, want %q", tc.out, tc.n, got, tc.want)
		}
	}
}
