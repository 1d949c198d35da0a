//go:build unix

package node

import (
	"os"
	"syscall"
)

// processAlive reports whether pid is a running process (signal 0 probes
// without signalling).
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}
