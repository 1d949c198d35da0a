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

// newBar is a progress bar of total rows (or bytes) on the terminal.
func (a *app) newBar(desc string, total int64, bytes bool) *progressbar.ProgressBar {
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
			bar = a.newBar(desc, int64(total), false)
		}
		_ = bar.Set(done)
		if done == total {
			finish()
		}
	}, finish
}

// emit prints v as JSON with --json, else as text writes it.
func (a *app) emit(v any, text func(io.Writer) error) error {
	if a.jsonOut {
		return a.printJSON(v)
	}
	return text(a.stdout)
}
