package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var updateHelp = flag.Bool("update-help", false, "rewrite testdata/help from the current --help output")

// TestHelpGolden pins the user-visible CLI: every command's --help output
// (commands, flags, defaults, examples) is compared with testdata/help.
// A deliberate change is recorded with `go test ./cmd/clawmem -run
// TestHelpGolden -update-help` and reviewed in the diff.
func TestHelpGolden(t *testing.T) {
	a := &app{}
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if !sub.Hidden && sub.Name() != "help" && sub.Name() != "completion" {
				walk(sub, append(append([]string(nil), path...), sub.Name()))
			}
		}
	}
	walk(a.rootCmd(), nil)
	if len(paths) < 30 {
		t.Fatalf("only %d commands found", len(paths))
	}
	seen := map[string]bool{}
	for _, p := range paths {
		name := "clawmem"
		if len(p) > 0 {
			name += "_" + strings.Join(p, "_")
		}
		seen[name+".txt"] = true
		code, out, errOut := runCLI(t, append(p, "--help")...)
		if code != 0 || errOut != "" {
			t.Errorf("%s --help: exit %d, stderr %q", name, code, errOut)
			continue
		}
		file := filepath.Join("testdata", "help", name+".txt")
		if *updateHelp {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s: %v (record it with -update-help)", name, err)
			continue
		}
		if out != string(want) {
			t.Errorf("%s --help changed:\n--- got\n%s\n--- want\n%s", name, out, want)
		}
	}
	// A command removed shows as a golden file nobody reads.
	files, _ := filepath.Glob(filepath.Join("testdata", "help", "*.txt"))
	for _, f := range files {
		if !seen[filepath.Base(f)] && !*updateHelp {
			t.Errorf("%s has no command any more", f)
		}
	}
}

// TestFlagUsageHasNoBackticks guards the flag placeholders in --help: pflag
// takes the first `quoted` word of a usage string as the value's name
// (pflag.UnquoteUsage), so "the local `clawmem up`" printed every command's
// --nats-url as "--nats-url clawmem up". Usage strings name the value by its
// type instead, and quote commands without backticks.
func TestFlagUsageHasNoBackticks(t *testing.T) {
	a := &app{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				name, _ := pflag.UnquoteUsage(f)
				t.Errorf("%s --%s: usage has a backtick, so --help shows the placeholder %q: %q", c.CommandPath(), f.Name, name, f.Usage)
			}
		}
		c.LocalFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.rootCmd())
}
