package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeKdamond writes a kdamond's sysfs entry and its /proc stat under
// root, as the kernel lays them out.
func fakeKdamond(t *testing.T, root string, n int, state string, pid int, sampleUs string, utime, stime int) {
	t.Helper()
	d := filepath.Join(root, damonAdmin, fmt.Sprint(n))
	intervals := filepath.Join(d, "contexts", "0", "monitoring_attrs", "intervals")
	if err := os.MkdirAll(intervals, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(d, "state"), state+"\n")
	write(filepath.Join(d, "pid"), fmt.Sprintf("%d\n", pid))
	write(filepath.Join(intervals, "sample_us"), sampleUs+"\n")
	setStat(t, root, pid, utime, stime)
}

func setStat(t *testing.T, root string, pid, utime, stime int) {
	t.Helper()
	p := filepath.Join(root, "proc", fmt.Sprint(pid))
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("%d (kdamond.%d) I 2 0 0 0 -1 2129984 0 0 0 0 %d %d 0 0 20 0 1 0 158 0 0 18446744073709551615\n", pid, pid, utime, stime)
	if err := os.WriteFile(filepath.Join(p, "stat"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The recall bench reports the DAMON monitors that were on and the CPU
// they took meanwhile; none on, no DAMON at all: no report.
func TestWatchDAMON(t *testing.T) {
	if watchDAMON(t.TempDir()) != nil {
		t.Fatal("a machine without DAMON reported a monitor")
	}

	root := t.TempDir()
	fakeKdamond(t, root, 0, "off", 84, "500000", 10, 20)
	if watchDAMON(root) != nil {
		t.Fatal("a monitor that is off was reported")
	}

	fakeKdamond(t, root, 1, "on", 90, "500000", 100, 250)
	fakeKdamond(t, root, 2, "on", 91, "100000", 0, 7)
	w := watchDAMON(root)
	if w == nil {
		t.Fatal("two monitors on, none reported")
	}
	setStat(t, root, 90, 100, 370) // 1.2 s more of system time
	setStat(t, root, 91, 3, 7)     // 0.03 s more of user time
	setStat(t, root, 84, 900, 900) // off: not counted
	got := w.stop()
	if got.Monitors != 2 || got.SampleMs != 100 || fmt.Sprintf("%.2f", got.CPUSeconds) != "1.23" {
		t.Fatalf("report %+v, want 2 monitors, 100 ms, 1.23 s", *got)
	}

	// A monitor that has gone since counts nothing, not a negative time.
	if err := os.RemoveAll(filepath.Join(root, "proc", "90")); err != nil {
		t.Fatal(err)
	}
	if got := w.stop(); got.CPUSeconds != 0 {
		t.Fatalf("after a monitor went: %v s", got.CPUSeconds)
	}
	var nilWatch *damonWatch
	if nilWatch.stop() != nil {
		t.Fatal("no watch, yet a report")
	}
}

// The report's text and JSON carry the monitor; without one, neither
// mentions it.
func TestRecallReportKernelMonitor(t *testing.T) {
	rep := RecallReport{N: 10, Dim: 8, Cores: 2, Levels: []RecallLevel{{Concurrency: 1}}}
	var plain bytes.Buffer
	if err := rep.WriteText(&plain); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "DAMON") {
		t.Fatalf("no monitor, yet:\n%s", plain.String())
	}
	if b, _ := json.Marshal(rep); strings.Contains(string(b), "kernelMonitor") {
		t.Fatalf("no monitor, yet JSON %s", b)
	}
	rep.KernelMonitor = &KernelMonitor{Monitors: 1, SampleMs: 500, CPUSeconds: 1.5}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "kdamond) was on, sampling every 500 ms, and took 1.50 s of CPU") {
		t.Fatalf("report:\n%s", text.String())
	}
	b, _ := json.Marshal(rep)
	if !strings.Contains(string(b), `"kernelMonitor":{"monitors":1,"sampleMs":500,"cpuSeconds":1.5}`) {
		t.Fatalf("JSON %s", b)
	}
}

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		line       string
		user, sys  uint64
		wantErrSub string
	}{
		{line: "84 (kdamond.0) I 2 0 0 0 -1 2129984 0 0 0 0 1 10815 0 0 20 0 1 0 158", user: 1, sys: 10815},
		// A command name with spaces and parentheses.
		{line: "7 (a) b (c)) S 1 7 7 0 -1 4194560 10 0 0 0 42 17 0 0 20 0 1 0 9", user: 42, sys: 17},
		{line: "84 kdamond I 2 0", wantErrSub: "no command name"},
		{line: "84 (kdamond.0) I 2 0 0", wantErrSub: "too few fields"},
		{line: "84 (k) I 2 0 0 0 -1 2129984 0 0 0 0 x 5 0", wantErrSub: "utime"},
		{line: "84 (k) I 2 0 0 0 -1 2129984 0 0 0 0 5 -1 0", wantErrSub: "stime"},
	} {
		user, sys, err := parseProcStat([]byte(tc.line))
		if tc.wantErrSub != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
				t.Errorf("%q: err %v, want %q", tc.line, err, tc.wantErrSub)
			}
			continue
		}
		if err != nil || user != tc.user || sys != tc.sys {
			t.Errorf("%q: %d %d %v, want %d %d", tc.line, user, sys, err, tc.user, tc.sys)
		}
	}
}

// FuzzParseProcStat: any bytes give an error or two counts, never a
// panic, and a line written back from the counts parses to them again.
func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("84 (kdamond.0) I 2 0 0 0 -1 2129984 0 0 0 0 1 10815 0 0 20 0 1 0 158"))
	f.Add([]byte("7 (a) b (c)) S 1 7 7 0 -1 4194560 10 0 0 0 42 17 0 0 20 0 1 0 9"))
	f.Add([]byte(")"))
	f.Add([]byte{0xff, ')', ' ', '1'})
	f.Fuzz(func(t *testing.T, b []byte) {
		user, sys, err := parseProcStat(b)
		if err != nil {
			return
		}
		again := fmt.Sprintf("1 (x) S 0 0 0 0 0 0 0 0 0 0 %d %d 0", user, sys)
		u2, s2, err := parseProcStat([]byte(again))
		if err != nil || u2 != user || s2 != sys {
			t.Fatalf("%q parsed to %d %d; written back, %d %d %v", b, user, sys, u2, s2, err)
		}
	})
}
