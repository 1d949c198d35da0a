//go:build unix

package instance

import (
	"os"
	"syscall"
)

// ProcessAlive reports whether pid is a running process (signal 0 probes
// without signalling).
func ProcessAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}
