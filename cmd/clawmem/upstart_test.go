package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/node"
)

// TestUpWinsTheStartRace: `clawmem stats` run over and over from the
// moment `clawmem up` is launched (as a readiness poll does) never makes
// up fail on the store's lock: up waits for a stats that holds the store
// for a moment, and a stats that finds up starting waits for it. Every
// stats succeeds, and up comes up and answers.
func TestUpWinsTheStartRace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real clawmem processes")
	}
	bin := clawmemBinary(t)
	for round := range 3 {
		dir := t.TempDir()
		up := launchUp(t, dir)
		runs := 0
		deadline := time.Now().Add(60 * time.Second)
		for {
			ready := node.InstanceRunning(dir)
			out, err := exec.Command(bin, "stats", "--data-dir", dir).CombinedOutput()
			runs++
			if err != nil {
				t.Fatalf("round %d, stats %d: %v\n%s\nup's log:\n%s", round, runs, err, out, up.logs.String())
			}
			if ready {
				break
			}
			// up's own failure is its last line, "clawmem: ...".
			if logs := up.logs.String(); strings.Contains("\n"+logs, "\nclawmem: ") || time.Now().After(deadline) {
				t.Fatalf("round %d: clawmem up never became ready:\n%s", round, logs)
			}
		}
		up.awaitRunFile(t)
		if logs := up.logs.String(); strings.Contains(logs, "is locked") || strings.Contains(logs, "level=ERROR") {
			t.Fatalf("round %d: up's log:\n%s", round, logs)
		}
		if _, err := os.Stat(filepath.Join(dir, node.StartingFile)); !os.IsNotExist(err) {
			t.Fatalf("round %d: the starting marker outlived the start: %v", round, err)
		}
		t.Logf("round %d: %d stats runs until up was ready", round, runs)
		up.cmd.Process.Kill()
	}
}

// TestUpPortTakenIsTheOnlyError: with the ingest, console or embedded NATS
// port taken, `clawmem up` exits non-zero before starting anything, and its
// first and only error names the port and the cause.
func TestUpPortTakenIsTheOnlyError(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real clawmem processes")
	}
	bin := clawmemBinary(t)
	for _, which := range []string{"ingest", "console", "nats"} {
		t.Run(which, func(t *testing.T) {
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			port := taken.Addr().(*net.TCPAddr).Port
			natsPort, ingest, ui := -1, "127.0.0.1:0", "127.0.0.1:0"
			switch which {
			case "ingest":
				ingest = taken.Addr().String()
			case "console":
				ui = taken.Addr().String()
			case "nats":
				natsPort = port
			}
			dir := t.TempDir()
			cfg := fmt.Sprintf(`{"nats":{"port":%d},"ingest":{"addr":%q},"ui":{"listen":%q},"watch":{"enabled":false}}`, natsPort, ingest, ui)
			if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, "up", "--data-dir", dir).CombinedOutput()
			if _, failed := err.(*exec.ExitError); !failed || ctx.Err() != nil {
				t.Fatalf("up: %v\n%s", err, out)
			}
			var errs []string
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "level=ERROR") || strings.HasPrefix(line, "clawmem:") {
					errs = append(errs, line)
				}
			}
			if len(errs) != 1 || !strings.Contains(errs[0], fmt.Sprintf(":%d", port)) || !strings.Contains(errs[0], "address already in use") {
				t.Fatalf("want one error naming port %d:\n%s", port, out)
			}
			if strings.Contains(string(out), "role failed") || strings.Contains(string(out), "embedded NATS started") {
				t.Fatalf("up started before finding the port taken:\n%s", out)
			}
			if _, err := os.Stat(filepath.Join(dir, node.StartingFile)); !os.IsNotExist(err) {
				t.Fatalf("the starting marker outlived the failed start: %v", err)
			}
		})
	}
}
