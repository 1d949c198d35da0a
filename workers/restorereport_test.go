package workers

import (
	"strings"
	"testing"
)

func TestRestoreReportWriteText(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  RestoreReport
		want string
	}{
		{"every line new", RestoreReport{Lines: 3, Expected: 3, Restored: 3, VectorsKept: 1, Embedded: 2},
			"restored f.jsonl\nexpected 3 memories, restored 3 (1 vectors from the file, 2 embedded)\n"},
		{"repeated ids", RestoreReport{Lines: 5, Duplicates: 2, Expected: 3, Restored: 3, Embedded: 3},
			"restored f.jsonl\nexpected 3 memories, restored 3 (0 vectors from the file, 3 embedded, 2 repeated ids skipped)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			tc.rep.WriteText(&b, "f.jsonl")
			if b.String() != tc.want {
				t.Fatalf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}
