//go:build !unix

package node

import "os"

// processAlive: FindProcess fails for a process that does not exist.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
