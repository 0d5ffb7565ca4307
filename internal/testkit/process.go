package testkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/launch"
)

// built is the iasql binary of this test binary's run: launch.Binary,
// resolved (and built, without IASQL_BIN) once, however many tests start it.
var built = sync.OnceValues(func() (string, error) {
	if p := os.Getenv("IASQL_BIN"); p != "" {
		return p, nil
	}
	dir, err := os.MkdirTemp("", "iasql-bin-")
	if err != nil {
		return "", fmt.Errorf("make a directory for the iasql binary: %w", err)
	}
	return launch.Binary(dir)
})

// Binary is the iasql binary tests start: IASQL_BIN (make test sets it to
// bin/iasql), else one built once for the test binary.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Command is `iasql args...` with launch.Command's environment for
// endpoint (the emulator's URL; "" is launch.NoCloud) and IASQL_DSN
// cleared, so that only the arguments name a database. Add to its Env,
// never replace it.
func Command(ctx context.Context, t testing.TB, endpoint string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := launch.Command(ctx, endpoint, Binary(t), args...)
	cmd.Env = append(cmd.Env, "IASQL_DSN=")
	return cmd
}

// Result is how a finished iasql command ended.
type Result struct {
	Code           int // exit code
	Stdout, Stderr string
}

// Run runs `iasql args...` (Command, without a cloud) to its end, failing t
// when it cannot start or takes longer than timeout.
func Run(t testing.TB, timeout time.Duration, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := Command(ctx, t, "", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errb.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run iasql %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("iasql %v did not finish within %s; stderr: %s", args, timeout, r.Stderr)
	}
	return r
}

// Process is a running iasql (a sidecar, most often), its stdout and
// stderr kept in its Log. It is killed when the test ends, and its log's
// end shown if the test failed.
type Process struct {
	Cmd    *exec.Cmd
	Log    *Log
	t      testing.TB
	exited chan struct{}
	err    error // Cmd.Wait's, once exited is closed
}

// Start starts `iasql args...` (Command) against the emulator at endpoint,
// with env (NAME=value) added to its environment.
func Start(t testing.TB, endpoint string, env []string, args ...string) *Process {
	t.Helper()
	p := &Process{Cmd: Command(context.Background(), t, endpoint, args...), Log: &Log{}, t: t, exited: make(chan struct{})}
	p.Cmd.Env = append(p.Cmd.Env, env...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Log, p.Log
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("start iasql %v: %v", args, err)
	}
	go func() {
		p.err = p.Cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("the log of iasql %s (pid %d), its end:\n%s", strings.Join(args, " "), p.Cmd.Process.Pid, Tail(p.Log.String(), 16000))
		}
	})
	return p
}

// ExitCode is the process's exit code (-1 when a signal ended it), once it
// has ended (WaitExit).
func (p *Process) ExitCode() int {
	<-p.exited
	return p.Cmd.ProcessState.ExitCode()
}

// Kill ends the process with SIGKILL (it has no chance to answer anything)
// and waits for it.
func (p *Process) Kill() {
	_ = p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Stop sends SIGTERM and returns how the process ended, failing the test
// when it has not within timeout.
func (p *Process) Stop(timeout time.Duration) error {
	p.t.Helper()
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	return p.WaitExit(timeout)
}

// WaitExit waits for the process to end on its own and returns Cmd.Wait's
// error, failing the test when it has not ended within timeout.
func (p *Process) WaitExit(timeout time.Duration) error {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		p.t.Fatalf("iasql (pid %d) did not exit within %s", p.Cmd.Process.Pid, timeout)
		return nil
	}
}

// WaitLog waits until re matches the process's log and returns the match
// (as Log.Find); it fails the test at once if the process ends first.
func (p *Process) WaitLog(timeout time.Duration, re *regexp.Regexp) string {
	p.t.Helper()
	var got string
	Wait(p.t, timeout, "a log line matching "+re.String(), func() error {
		var ok bool
		if got, ok = p.Log.Find(re); ok {
			return nil
		}
		select {
		case <-p.exited:
			// Its output is all in the log once it has exited.
			if got, ok = p.Log.Find(re); ok {
				return nil
			}
			p.t.Fatalf("iasql (pid %d) exited (%v) before logging a line matching %s", p.Cmd.Process.Pid, p.err, re)
		default:
		}
		return ErrNotYet
	})
	return got
}
