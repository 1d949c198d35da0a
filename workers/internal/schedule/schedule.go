// Package schedule is the cron of the workers' scheduled jobs (backups,
// consolidation, transcript distillation): a run still going when its
// next is due makes that one skip, and cron's own log goes to slog.
package schedule

import (
	"log/slog"

	"github.com/robfig/cron/v3"
)

// New is a cron whose runs never overlap, logging to log.
func New(log *slog.Logger) *cron.Cron {
	l := logger{log}
	return cron.New(cron.WithLogger(l), cron.WithChain(cron.SkipIfStillRunning(l)))
}

// logger adapts cron's logger to slog.
type logger struct{ l *slog.Logger }

func (c logger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c logger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append([]any{"err", err}, kv...)...)
}
