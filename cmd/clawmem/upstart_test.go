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

	"github.com/clawmem/clawmem/internal/instance"
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
			ready := instance.Running(dir)
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
		if _, err := os.Stat(filepath.Join(dir, instance.StartingFile)); !os.IsNotExist(err) {
			t.Fatalf("round %d: the starting marker outlived the start: %v", round, err)
		}
		t.Logf("round %d: %d stats runs until up was ready", round, runs)
		up.cmd.Process.Kill()
	}
}

// TestUpPortTakenIsTheOnlyError: with the ingest, console or embedded NATS
// port taken, given in the config or by --listen/--ui-listen, `clawmem up`
// exits non-zero before starting anything, and its first and only error
// names the port and the cause, and for a listener the flag and config key
// that choose another.
func TestUpPortTakenIsTheOnlyError(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real clawmem processes")
	}
	bin := clawmemBinary(t)
	for _, c := range []struct {
		which, flag string
		want        []string
	}{
		{which: "ingest", want: []string{"hook ingest", "--listen", "ingest.addr"}},
		{which: "ingest", flag: "--listen", want: []string{"hook ingest", "--listen", "ingest.addr"}},
		{which: "console", want: []string{"web console", "--ui-listen", "ui.listen"}},
		{which: "console", flag: "--ui-listen", want: []string{"web console", "--ui-listen", "ui.listen"}},
		{which: "nats"},
	} {
		t.Run(c.which+c.flag, func(t *testing.T) {
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			port := taken.Addr().(*net.TCPAddr).Port
			natsPort, ingest, ui := -1, "127.0.0.1:0", "127.0.0.1:0"
			args := []string{"up", "--data-dir", t.TempDir()}
			switch {
			case c.flag != "":
				args = append(args, c.flag, taken.Addr().String())
			case c.which == "ingest":
				ingest = taken.Addr().String()
			case c.which == "console":
				ui = taken.Addr().String()
			case c.which == "nats":
				natsPort = port
			}
			dir := args[2]
			cfg := fmt.Sprintf(`{"nats":{"port":%d},"ingest":{"addr":%q},"ui":{"listen":%q},"watch":{"enabled":false}}`, natsPort, ingest, ui)
			if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
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
			for _, w := range c.want {
				if !strings.Contains(errs[0], w) {
					t.Fatalf("the error does not say %q: %s", w, errs[0])
				}
			}
			if strings.Contains(string(out), "role failed") || strings.Contains(string(out), "embedded NATS started") {
				t.Fatalf("up started before finding the port taken:\n%s", out)
			}
			if _, err := os.Stat(filepath.Join(dir, instance.StartingFile)); !os.IsNotExist(err) {
				t.Fatalf("the starting marker outlived the failed start: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "nats")); !os.IsNotExist(err) {
				t.Fatalf("up made the NATS store before finding the port taken: %v", err)
			}
		})
	}
}

// TestCommandsWaitForAStartingUp: while the data dir's marker names a live
// `clawmem up` that is starting, a command waits for it (saying so after a
// second) and gives up at the bound; --db on that store fails at once,
// saying it is starting; a marker left by a dead process is ignored.
func TestCommandsWaitForAStartingUp(t *testing.T) {
	prev := startWait
	startWait = 1500 * time.Millisecond
	t.Cleanup(func() { startWait = prev })
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no `true` to run:", err)
	}
	cases := []struct {
		name       string
		pid        int
		db         bool
		wantCode   int
		wantErr    []string
		minTook    time.Duration
		maxTook    time.Duration
		notWantErr string
	}{
		{name: "waits, then gives up", pid: os.Getpid(), wantCode: 1, wantErr: []string{"clawmem is starting…", "still starting after 1.5s"},
			minTook: 1500 * time.Millisecond, maxTook: 10 * time.Second},
		{name: "--db on its store", pid: os.Getpid(), db: true, wantCode: 1, wantErr: []string{"is starting on", "leave out --db"},
			maxTook: time.Second, notWantErr: "clawmem is starting…"},
		{name: "marker of a dead process", pid: dead.ProcessState.Pid(), maxTook: 10 * time.Second, notWantErr: "starting"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeConfig(t, dir, "")
			if err := os.WriteFile(filepath.Join(dir, instance.StartingFile), fmt.Appendf(nil, `{"pid":%d}`, c.pid), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"stats", "--data-dir", dir}
			if c.db {
				args = append(args, "--db", filepath.Join(dir, "store"))
			}
			start := time.Now()
			code, out, errOut := runCLI(t, args...)
			took := time.Since(start)
			if code != c.wantCode || took < c.minTook || took > c.maxTook {
				t.Fatalf("exit %d after %v: %s %s", code, took, out, errOut)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(errOut, w) {
					t.Fatalf("stderr lacks %q: %s", w, errOut)
				}
			}
			if c.notWantErr != "" && strings.Contains(errOut, c.notWantErr) {
				t.Fatalf("stderr: %s", errOut)
			}
		})
	}
}
