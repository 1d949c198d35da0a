package config

import (
	"errors"
	"fmt"
	"io"
)

// CheckReport is what `clawmem config check` finds.
type CheckReport struct {
	OK       bool     `json:"ok"`
	File     string   `json:"file,omitempty"`
	Format   string   `json:"format,omitempty"`
	Entry    string   `json:"entry,omitempty"`
	Errors   []string `json:"errors"`
	Warnings []string `json:"warnings"`
}

// Check reads the configuration o finds and reports every problem, as
// data: a config that does not load is a report with errors.
func Check(o Options) CheckReport {
	rep := CheckReport{Errors: []string{}, Warnings: []string{}}
	f, err := Read(o)
	var cerr *Error
	switch {
	case err == nil:
		rep.OK, rep.File, rep.Format, rep.Entry = true, f.Path, f.Format, f.Entry
		rep.Warnings = append(rep.Warnings, f.Warnings...)
	case errors.As(err, &cerr):
		rep.File, rep.Entry, rep.Errors = cerr.File, cerr.Entry, cerr.Problems
	default:
		rep.Errors = []string{err.Error()}
	}
	return rep
}

// WriteText prints the report for a person: where the config came from,
// then each error and warning on a line of its own.
func (rep CheckReport) WriteText(w io.Writer) {
	where := "no config file: defaults only"
	if rep.File != "" {
		where = rep.File
		if rep.Format != "" {
			where += " (" + rep.Format + ")"
		}
	}
	if rep.Entry != "" {
		where += ", " + rep.Entry
	}
	if rep.OK {
		fmt.Fprintf(w, "ok: %s\n", where)
	} else {
		fmt.Fprintf(w, "config %s: %d error(s)\n", where, len(rep.Errors))
	}
	for _, e := range rep.Errors {
		fmt.Fprintln(w, "error:", e)
	}
	for _, warning := range rep.Warnings {
		fmt.Fprintln(w, "warning:", warning)
	}
}
