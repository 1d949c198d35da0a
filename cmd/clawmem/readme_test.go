package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeBlock is the README's code block after <!-- readme-test: name -->.
func readmeBlock(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- readme-test: " + regexp.QuoteMeta(name) + " -->\n```[a-z]*\n(.*?)```")
	m := re.FindSubmatch(b)
	if m == nil {
		t.Fatalf("README has no code block marked readme-test: %s", name)
	}
	return string(m[1])
}

// The README's HTTP API example, run as written (bash, curl, the clawmem
// binary on PATH) against a real `clawmem up`: only the address is the
// test instance's.
func TestReadmeHTTPAPIExample(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed to run the README's example (.ci/run installs it)")
	}
	dir := t.TempDir()
	in := startUp(t, dir)
	script := strings.ReplaceAll(readmeBlock(t, "http-api"), "http://127.0.0.1:7433", in.info.IngestURL)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "CLAWMEM_DATA_DIR="+dir,
		"PATH="+filepath.Dir(clawmemBinary(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's example failed: %v\n%s\nclawmem up:\n%s", err, out, in.logs.String())
	}
	for _, want := range []string{`"action":"created"`, "Helix", `"openapi": "3.1.0"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the example's output lacks %q:\n%s", want, out)
		}
	}
	// The recall found what the store stored: its reply names the memory.
	if strings.Count(string(out), "I switched from vim to Helix") < 3 {
		t.Errorf("store, recall and list should each show the memory:\n%s", out)
	}
}
