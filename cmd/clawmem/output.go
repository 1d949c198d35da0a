package main

import (
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
)

// terminal is stderr when it is a terminal and the output is for a person
// (not --json): progress bars are drawn there and nowhere else.
func (a *app) terminal() *os.File {
	f, ok := a.stderr.(*os.File)
	if !ok || a.jsonOut || !isatty.IsTerminal(f.Fd()) {
		return nil
	}
	return f
}

// Terminal reports whether progress bars are drawn.
func (a *app) Terminal() bool { return a.terminal() != nil }

// NewBar is a progress bar of total rows (or bytes) on the terminal.
func (a *app) NewBar(desc string, total int64, bytes bool) *progressbar.ProgressBar {
	opts := []progressbar.Option{progressbar.OptionSetWriter(a.terminal()), progressbar.OptionSetDescription(desc),
		progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100 * time.Millisecond)}
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true))
	} else {
		opts = append(opts, progressbar.OptionShowCount())
	}
	return progressbar.NewOptions64(total, opts...)
}

// progressBar shows progress on a terminal: progress draws it (finishing
// it when done reaches total), finish ends it early. Elsewhere progress is
// nil and finish does nothing.
func (a *app) progressBar(desc string) (progress func(done, total int), finish func()) {
	if a.terminal() == nil {
		return nil, func() {}
	}
	var bar *progressbar.ProgressBar
	finish = func() {
		if bar != nil {
			_ = bar.Finish()
		}
	}
	return func(done, total int) {
		if bar == nil {
			bar = a.NewBar(desc, int64(total), false)
		}
		_ = bar.Set(done)
		if done == total {
			finish()
		}
	}, finish
}

// The commands of cmd/clawmem/internal (chaos.CLI, bench.CLI, bulk.CLI)
// reach the global flags and print through these.

func (a *app) JSON() bool             { return a.jsonOut }
func (a *app) NATSURL() string        { return a.natsURL }
func (a *app) DB() string             { return a.dbDir }
func (a *app) Stdout() io.Writer      { return a.stdout }
func (a *app) Silent(err error) error { return errSilent{err} }

// Progress is where long benchmarks report how far they are: stderr,
// unless the output is JSON for a machine.
func (a *app) Progress() io.Writer {
	if a.jsonOut {
		return io.Discard
	}
	return a.stderr
}

// Emit prints v as JSON with --json, else as text writes it.
func (a *app) Emit(v any, text func(io.Writer) error) error {
	if a.jsonOut {
		return a.PrintJSON(v)
	}
	return text(a.stdout)
}
