package chaos

import (
	"strings"
	"testing"
)

// The watcher scenario's count fails what it must: an entry missing, one
// published twice, one under another session, one never written.
func TestWatcherTally(t *testing.T) {
	written := map[string]wrote{
		"wf000000": {faultTruncate, "s1"},
		"wf000001": {faultTruncate, "s1"},
		"wf000002": {faultRewrite, "s2"},
		"wf000003": {faultSQLite, "s3"},
		"wf000004": {faultSQLite, "s3"},
	}
	tests := []struct {
		name    string
		seen    []sighting
		want    watchCount
		foreign int
		wrong   int
		fails   []string
	}{
		{
			name: "each once",
			seen: []sighting{{"wf000000", "s1"}, {"wf000001", "s1"}, {"wf000002", "s2"}, {"wf000003", "s3"}, {"wf000004", "s3"}},
			want: watchCount{Written: 5, Published: 5, Once: 5},
		},
		{
			name: "one missing, one twice, one elsewhere, one unknown",
			seen: []sighting{{"wf000000", "s1"}, {"wf000002", "s2"}, {"wf000002", "s2"}, {"wf000003", "s9"},
				{"wf000004", "s3"}, {"wf000999", "s3"}, {"", "s3"}},
			want:    watchCount{Written: 5, Published: 4, Once: 3, Missing: 1, Dup: 1},
			foreign: 2, wrong: 1,
			fails: []string{"truncate: 1 of 2 entries missing (wf000001)", "rewrite: 1 of 1 entries published more than once (wf000002)",
				"2 entries in the stream that were never written", "1 entries published under another session"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tallyWatch(written, tt.seen)
			if got.watchCount != tt.want || got.Foreign != tt.foreign || got.WrongSession != tt.wrong {
				t.Fatalf("tally %+v foreign %d wrong session %d, want %+v %d %d", got.watchCount, got.Foreign, got.WrongSession, tt.want, tt.foreign, tt.wrong)
			}
			var r Result
			w := &watchRun{r: &r, wrote: written, faults: map[string]int{faultTruncate: 2}}
			w.report(got)
			r.finish()
			if r.Pass != (len(tt.fails) == 0) || len(r.Failures) != len(tt.fails) {
				t.Fatalf("pass %v, failures %q, want %q", r.Pass, r.Failures, tt.fails)
			}
			for i, f := range tt.fails {
				if !strings.HasPrefix(r.Failures[i], f) {
					t.Errorf("failure %d: %q, want %q", i, r.Failures[i], f)
				}
			}
			sum := "entries 5 written, " + map[bool]string{true: "5 published once, 0 missing, 0 dup", false: "3 published once, 1 missing, 1 dup"}[tt.fails == nil] +
				"; truncate 2, rotate 0, rewrite 0, delete 0, sqlite 0, kills 0"
			if r.Summary != sum {
				t.Errorf("summary %q, want %q", r.Summary, sum)
			}
		})
	}
}
