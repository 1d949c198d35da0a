//go:build !unix

package instance

import "os"

// ProcessAlive reports whether pid is a running process: FindProcess
// fails for one that does not exist.
func ProcessAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
