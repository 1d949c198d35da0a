package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A run compared with a baseline gives each figure both measured as a
// ratio, says which way is better, and leaves out what one of them lacks;
// a baseline that is not a report is refused.
func TestStoreBaseline(t *testing.T) {
	before := StoreReport{InsertRate: 4000, Open: OpenReport{OpenSeconds: 2, RSSMB: 500}}
	before.Index.ExactP50 = 10 * time.Millisecond
	raw, _ := json.Marshal(before)
	path := filepath.Join(t.TempDir(), "before.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	base, err := LoadStoreBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	now := StoreReport{InsertRate: 3000, LoadRate: 9000, Open: OpenReport{OpenSeconds: 0.5, RSSMB: 505}}
	now.Index.ExactP50 = 10 * time.Millisecond
	now.Compare(base)
	got := map[string]Change{}
	for _, c := range now.Changes {
		got[c.Figure] = c
	}
	if c := got["cold open (s)"]; c.Ratio != 0.25 || c.Better != "lower" {
		t.Errorf("cold open: %+v", c)
	}
	if c := got["insert at N (memories/s)"]; c.Ratio != 0.75 || c.Better != "higher" {
		t.Errorf("insert: %+v", c)
	}
	if _, ok := got["bulk load (memories/s)"]; ok {
		t.Error("a figure the baseline lacks is compared")
	}
	var b bytes.Buffer
	writeChanges(&b, now.Changes)
	for _, want := range []string{"x0.25 better", "x0.75 worse", "x1.00 same"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the comparison does not say %q:\n%s", want, b.String())
		}
	}
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadStoreBaseline(path); err == nil || !strings.Contains(err.Error(), "not `clawmem bench store --json` output") {
		t.Errorf("a broken baseline: %v", err)
	}
}
