package node

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// InstanceRunning reports a live `clawmem up` on dataDir.
func InstanceRunning(dataDir string) bool {
	b, err := os.ReadFile(filepath.Join(dataDir, RunFile))
	if err != nil {
		return false
	}
	var info RunInfo
	if json.Unmarshal(b, &info) != nil || info.PID <= 0 {
		return false
	}
	return processAlive(info.PID)
}
