//go:build unix

package sqlitestore

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/clawmem/clawmem/engine"
)

// lockDir takes an exclusive advisory lock on dir/LOCK so that two
// processes never write one store: the in-memory vector index would go
// stale in whichever process did not make a change.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked; stop the running clawmem (or talk to it over NATS) and try again", engine.ErrLocked, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

func unlockDir(f *os.File) error { return f.Close() }
