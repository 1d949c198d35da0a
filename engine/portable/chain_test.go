package portable

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckChains(t *testing.T) {
	const (
		a, b, c, d, e = "a", "b", "c", "d", "e"
		stored        = "s"
	)
	rows := []ChainRow{
		{Line: 1, ID: a, SupersededBy: b},      // a → b → c: fine
		{Line: 2, ID: b, SupersededBy: c},      //
		{Line: 3, ID: c},                       //
		{Line: 4, ID: d, SupersededBy: stored}, // the successor is in the store
		{Line: 5, ID: e, SupersededBy: "gone"}, // missing link
		{Line: 6, ID: "x", SupersededBy: "y"},  // x → y → z → x: a cycle
		{Line: 7, ID: "y", SupersededBy: "z"},  //
		{Line: 8, ID: "z", SupersededBy: "x"},  //
		{Line: 9, ID: "w", SupersededBy: "x"},  // leads into the cycle, not on it
		{Line: 10, ID: "self", SupersededBy: "self"},
	}
	asked := 0
	bad, err := CheckChains(rows, func(id string) (bool, error) { asked++; return id == stored, nil })
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{5: "missing link", 6: "cycle", 7: "cycle", 8: "cycle", 10: "cycle"}
	if len(bad) != len(want) {
		t.Errorf("bad lines %v, want %v", bad, want)
	}
	for line, w := range want {
		if !strings.Contains(bad[line], w) {
			t.Errorf("line %d: %q, want %q", line, bad[line], w)
		}
	}
	if asked != 2 {
		t.Errorf("store asked %d times, want 2 (only for successors outside the file)", asked)
	}
	boom := errors.New("store down")
	if _, err := CheckChains(rows, func(string) (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Errorf("store error: %v", err)
	}
	if bad, _ := CheckChains(nil, nil); len(bad) != 0 {
		t.Errorf("no rows: %v", bad)
	}
}
