package deploy_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestSystemdUnit(t *testing.T) {
	text := readFile(t, filepath.Join("systemd", "clawmem.service"))
	for _, want := range []string{"[Unit]", "[Service]", "[Install]", "WantedBy=default.target", "Environment=CLAWMEM_DATA_DIR="} {
		if !strings.Contains(text, want) {
			t.Errorf("clawmem.service lacks %q", want)
		}
	}
	execStart := regexp.MustCompile(`(?m)^ExecStart=(.*)$`).FindAllStringSubmatch(text, -1)
	if len(execStart) != 1 || !strings.HasSuffix(strings.Fields(execStart[0][1])[0], "/clawmem") ||
		!slices.Contains(strings.Fields(execStart[0][1]), "up") {
		t.Errorf("ExecStart %v: want one `.../clawmem up`", execStart)
	}
	if !regexp.MustCompile(`(?m)^#\s*Environment=[A-Z_]*API_KEY=`).MatchString(text) {
		t.Error("no example Environment= line for an API key")
	}
	for _, m := range regexp.MustCompile(`(?m)^Environment=([A-Za-z_]+)=(.*)$`).FindAllStringSubmatch(text, -1) {
		if secretName.MatchString(m[1]) && m[2] != "" {
			t.Errorf("clawmem.service sets %s in the unit; use EnvironmentFile", m[1])
		}
	}
	checkTextSecrets(t, "clawmem.service", text)
}
