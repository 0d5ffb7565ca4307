package testkit

import (
	"bytes"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Log is what a child process or a logger writes, readable while it is
// written.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Mark is how much has been written so far: Since(Mark()) is what is
// written after now.
func (l *Log) Mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

// Since is what has been written since mark (Mark).
func (l *Log) Since(mark int) string { return l.String()[mark:] }

// Contains says whether s has been written.
func (l *Log) Contains(s string) bool { return strings.Contains(l.String(), s) }

// Find returns re's first match so far: its first group, or the whole match
// when re has none.
func (l *Log) Find(re *regexp.Regexp) (string, bool) {
	m := re.FindStringSubmatch(l.String())
	switch {
	case m == nil:
		return "", false
	case len(m) > 1:
		return m[1], true
	default:
		return m[0], true
	}
}

// WaitFor waits until re matches what has been written and returns its
// first match (as Find).
func (l *Log) WaitFor(t testing.TB, timeout time.Duration, re *regexp.Regexp) string {
	t.Helper()
	var got string
	Until(t, timeout, "a log line matching "+re.String(), func() bool {
		var ok bool
		got, ok = l.Find(re)
		return ok
	})
	return got
}

// Logger is a text logger at level that writes to l.
func (l *Log) Logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: level}))
}

// Tail is the last n bytes of s (all of it when shorter).
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
