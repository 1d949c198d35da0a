package testkit

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// Buffer collects what goroutines write (a log, a subprocess's output)
// while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Logger is a text log at Info into b.
func (b *Buffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// Logged counts the lines of b's log (Logger's format) with message msg.
func (b *Buffer) Logged(msg string) int {
	return strings.Count(b.String(), `msg="`+msg+`"`)
}
