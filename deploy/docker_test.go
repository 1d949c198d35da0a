package deploy_test

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestDockerfile(t *testing.T) {
	text := readFile(t, repoPath("Dockerfile"))
	var froms []string
	var lastStage []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(strings.ToUpper(line), "FROM ") {
			froms = append(froms, line)
			lastStage = nil
		}
		lastStage = append(lastStage, line)
	}
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, have %d FROM lines", len(froms))
	}
	if !strings.HasPrefix(froms[0], "FROM golang:1.26") {
		t.Errorf("build stage %q: want golang:1.26", froms[0])
	}
	if strings.Contains(froms[len(froms)-1], "golang") {
		t.Errorf("runtime stage %q: want a small base, not the Go toolchain", froms[len(froms)-1])
	}
	for _, want := range []string{"CGO_ENABLED=0", "-o /clawmem ./cmd/clawmem"} {
		if !strings.Contains(text, want) {
			t.Errorf("build does not contain %q", want)
		}
	}
	final := strings.Join(lastStage, "\n")
	for _, want := range []string{
		"VOLUME " + dataDir, "ENV CLAWMEM_DATA_DIR=" + dataDir, `ENTRYPOINT ["/clawmem"]`, "COPY --from=",
	} {
		if !strings.Contains(final, want) {
			t.Errorf("runtime stage lacks %q", want)
		}
	}
	user := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindStringSubmatch(final)
	if user == nil {
		t.Fatal("runtime stage has no USER: it would run as root")
	}
	if uid, _, _ := strings.Cut(user[1], ":"); uid != runtimeUID {
		t.Errorf("USER %s: want %s (the UID the k8s manifests run as)", user[1], runtimeUID)
	}
	checkTextSecrets(t, "Dockerfile", text)
}

func TestDockerignore(t *testing.T) {
	var patterns []string
	for _, line := range strings.Split(readFile(t, repoPath(".dockerignore")), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, strings.TrimPrefix(line, "/"))
		}
	}
	if !slices.Contains(patterns, ".env") {
		t.Error(".env (compose's secrets file) is not excluded from the build context")
	}
	// The build needs these.
	for _, need := range []string{"go.mod", "go.sum", "cmd/clawmem/main.go", "schemas/subjects.go", "engine", "internal"} {
		for _, p := range patterns {
			if strings.HasPrefix(p, "!") {
				continue
			}
			p = strings.TrimPrefix(p, "**/")
			if ok, _ := path.Match(p, need); ok || strings.HasPrefix(need, strings.TrimSuffix(p, "/")+"/") {
				t.Errorf(".dockerignore pattern %q excludes %s, which the build needs", p, need)
			}
		}
	}
}
