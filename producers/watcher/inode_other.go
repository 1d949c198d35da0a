//go:build !unix

package watcher

import "os"

// inodeOf returns 0: this platform has no inode in os.FileInfo, so renamed
// files are matched by name and fingerprint alone.
func inodeOf(os.FileInfo) uint64 { return 0 }
