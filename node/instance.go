package node

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// InstanceRunning reports a live `clawmem up` on dataDir.
func InstanceRunning(dataDir string) bool {
	info, ok := ReadRunInfo(dataDir)
	return ok && info.PID > 0 && processAlive(info.PID)
}

// ReadRunInfo reads the run file of the `clawmem up` on dataDir; false
// when there is none, or it does not decode.
func ReadRunInfo(dataDir string) (RunInfo, bool) {
	var info RunInfo
	b, err := os.ReadFile(filepath.Join(dataDir, RunFile))
	return info, err == nil && json.Unmarshal(b, &info) == nil
}
