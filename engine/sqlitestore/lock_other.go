//go:build !unix

package sqlitestore

import (
	"fmt"
	"os"

	"github.com/clawmem/clawmem/engine"
)

// lockDir creates dir/LOCK exclusively; on systems without flock a stale
// file left by a crash must be removed by hand, which the error says.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: %s exists; stop the running clawmem, or delete the file if none runs", engine.ErrLocked, path)
	}
	return f, nil
}

func unlockDir(f *os.File) error {
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
