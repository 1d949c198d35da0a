package chaos

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/clawmem/clawmem/config"
)

// checkConfig writes body to name in dir and checks it as `clawmem config
// check --config` does (config.Check: read, parse by extension, every key
// and value checked, ${VAR} references resolved from the environment). It
// is refused when the check reports errors; a panic is not a refusal.
func checkConfig(dir, name string, body []byte) (refused bool, answer string) {
	path := filepath.Join(dir, filepath.Base(cmp.Or(name, "config.json")))
	if err := os.WriteFile(path, body, 0o600); err != nil {
		return false, "write the file: " + err.Error()
	}
	defer os.Remove(path)
	defer func() {
		if r := recover(); r != nil {
			refused, answer = false, clip(fmt.Sprint("panic: ", r))
		}
	}()
	rep := config.Check(config.Options{Path: path})
	if rep.OK {
		return false, "loaded: " + rep.Format
	}
	msg := strings.Join(rep.Errors, "; ")
	return msg != "", clip(msg)
}
