package bench

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// KernelMonitor is the kernel's DAMON access monitoring as it ran beside
// a recall benchmark. Each sampling round of a kdamond thread holds a
// core while it checks and clears pages' accessed bits: on a 2-core
// virtual machine here, rounds of 14–56 ms every 0.55 s, in which the
// recalls had one core, and p99 at 1,000,000 memories rose from about
// 10 to 60–90 ms when paced at 300 a second. The report says so, since
// nothing in clawmem's own figures shows it.
type KernelMonitor struct {
	// Monitors is how many kdamond threads were on.
	Monitors int `json:"monitors"`
	// SampleMs is their shortest sampling interval.
	SampleMs float64 `json:"sampleMs"`
	// CPUSeconds is the CPU time they took while the recalls ran.
	CPUSeconds float64 `json:"cpuSeconds"`
}

// damonAdmin is where the kernel lists its DAMON monitors (sysfs).
const damonAdmin = "sys/kernel/mm/damon/admin/kdamonds"

// userHZ is the unit of /proc/<pid>/stat's CPU times: USER_HZ, 100 on
// every Linux architecture Go supports.
const userHZ = 100

// damonWatch measures the DAMON monitors that were on when it started.
type damonWatch struct {
	root     string
	pids     []int
	sampleUs int64
	cpu0     time.Duration
}

// watchDAMON starts measuring the DAMON monitors that are on under root
// ("/" on a real machine); nil when there are none, or no DAMON (not
// Linux, or a kernel without it).
func watchDAMON(root string) *damonWatch {
	dirs, _ := filepath.Glob(filepath.Join(root, damonAdmin, "[0-9]*"))
	w := &damonWatch{root: root}
	for _, d := range dirs {
		if state, err := os.ReadFile(filepath.Join(d, "state")); err != nil || strings.TrimSpace(string(state)) != "on" {
			continue
		}
		pid, err := readInt(filepath.Join(d, "pid"))
		if err != nil || pid <= 0 {
			continue
		}
		w.pids = append(w.pids, int(pid))
		samples, _ := filepath.Glob(filepath.Join(d, "contexts", "[0-9]*", "monitoring_attrs", "intervals", "sample_us"))
		for _, s := range samples {
			if us, err := readInt(s); err == nil && us > 0 && (w.sampleUs == 0 || us < w.sampleUs) {
				w.sampleUs = us
			}
		}
	}
	if len(w.pids) == 0 {
		return nil
	}
	w.cpu0 = w.cpu()
	return w
}

// stop reports the monitors and the CPU they took since watchDAMON (nil
// for a nil watch).
func (w *damonWatch) stop() *KernelMonitor {
	if w == nil {
		return nil
	}
	return &KernelMonitor{
		Monitors:   len(w.pids),
		SampleMs:   float64(w.sampleUs) / 1000,
		CPUSeconds: max(w.cpu()-w.cpu0, 0).Seconds(),
	}
}

// cpu is the CPU time the watched monitors have taken; one that has
// gone (or whose stat does not parse) counts nothing.
func (w *damonWatch) cpu() time.Duration {
	var total time.Duration
	for _, pid := range w.pids {
		b, err := os.ReadFile(filepath.Join(w.root, "proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		if user, sys, err := parseProcStat(b); err == nil {
			total += time.Duration(user+sys) * (time.Second / userHZ)
		}
	}
	return total
}

// parseProcStat reads the user and system CPU times (in USER_HZ ticks)
// from a /proc/<pid>/stat line: "pid (comm) state ppid …", utime and
// stime being the 14th and 15th fields. comm may hold spaces and
// parentheses, so the fields are counted from the last ')'.
func parseProcStat(b []byte) (user, sys uint64, err error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, 0, errors.New("proc stat: no command name")
	}
	fields := strings.Fields(string(b[end+1:]))
	// fields[0] is the 3rd field (state): utime is fields[11].
	if len(fields) < 13 {
		return 0, 0, errors.New("proc stat: too few fields")
	}
	if user, err = strconv.ParseUint(fields[11], 10, 64); err != nil {
		return 0, 0, errors.New("proc stat: utime is not a count")
	}
	if sys, err = strconv.ParseUint(fields[12], 10, 64); err != nil {
		return 0, 0, errors.New("proc stat: stime is not a count")
	}
	return user, sys, nil
}

// readInt reads a file holding one integer.
func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
