package authdir

import (
	"os"
	"sync"
	"testing"
)

func TestTokenIsCreatedOnceOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	toks := make([]string, 8)
	for i := range toks {
		wg.Go(func() {
			tok, err := Token(dir, IngestToken)
			if err != nil {
				t.Error(err)
			}
			toks[i] = tok
		})
	}
	wg.Wait()
	for _, tok := range toks {
		if tok != toks[0] || len(tok) < 40 {
			t.Fatalf("tokens differ or are short: %q", toks)
		}
	}
	fi, err := os.Stat(Path(dir, IngestToken))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(Dir(dir))
	if di.Mode().Perm() != 0o700 {
		t.Fatalf("auth dir mode %v, want 0700", di.Mode().Perm())
	}
	again, err := Token(dir, IngestToken)
	if err != nil || again != toks[0] {
		t.Fatalf("second read %q %v, want %q", again, err, toks[0])
	}
}

func TestReadRefusesAnEmptyFile(t *testing.T) {
	dir := t.TempDir()
	if err := EnsureDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Path(dir, ConsoleToken), []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Token(dir, ConsoleToken); err == nil {
		t.Fatal("an empty token file was accepted")
	}
}
