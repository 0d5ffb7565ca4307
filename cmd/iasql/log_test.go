package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestLogLines: every record is one line in both formats, errors and
// strings of several lines included (their lines joined with "; "), and
// durations read as Go prints them.
func TestLogLines(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var out bytes.Buffer
		f := newFlags("run", "", "", &out)
		logger := logFlags(f, &out)
		if err := f.parse([]string{"--log-format", format}); err != nil {
			t.Fatal(err)
		}
		log, err := logger()
		if err != nil {
			t.Fatal(err)
		}
		joined := errors.Join(errors.New("first failure"), fmt.Errorf("second:\n  DETAIL: the server's detail"))
		log.Warn("a cycle failed\nbadly", "err", joined, "note", "line one\r\nline two", "took", 1500*time.Millisecond)
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != 1 {
			t.Errorf("%s: %d lines, want 1:\n%s", format, len(lines), out.String())
		}
		for _, want := range []string{"a cycle failed; badly", "first failure; second:; DETAIL: the server's detail", "line one; line two", "1.5s"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: %q lacks %q", format, out.String(), want)
			}
		}
		if strings.Contains(out.String(), `\n`) {
			t.Errorf("%s: an escaped newline: %s", format, out.String())
		}
	}
}
