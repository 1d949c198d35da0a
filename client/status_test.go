package client

import (
	"bytes"
	"strings"
	"testing"
)

// Status text names each writer with its partitions in ranges, and says
// when none holds a partition.
func TestStatusText(t *testing.T) {
	st := Status{Writers: []Writer{{ID: "w1", Partitions: []int{0, 1, 2, 3, 5, 7, 8}}, {ID: "w2", Partitions: []int{4}}},
		LogSeq: 9, Instances: []Instance{{ID: "q1", Role: "replica", LogSeq: 9}}}
	var b bytes.Buffer
	if err := st.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"w1 holds partitions 0-3, 5, 7-8", "w2 holds partition 4", "q1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := (Status{}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "none holds a partition") {
		t.Errorf("no writers:\n%s", b.String())
	}
}
