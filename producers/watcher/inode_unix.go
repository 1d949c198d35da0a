//go:build unix

package watcher

import (
	"os"
	"syscall"
)

// inodeOf returns the file's inode number.
func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino) // Ino is not uint64 on every unix
	}
	return 0
}
