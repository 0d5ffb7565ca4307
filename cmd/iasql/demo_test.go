package main_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/testkit"
)

// demoCase is one way a user stops `iasql demo`.
type demoCase struct {
	name string
	// closeOutput closes the demo's stdout and stderr before the signal:
	// make run | tee, with tee gone first.
	closeOutput bool
	signal      syscall.Signal
}

// TestDemoRemovesClusterOnInterrupt: Ctrl-C of `make run` (SIGINT to the
// whole process group), also when its output went into a tee that is gone,
// stops the throwaway server and removes its directory.
func TestDemoRemovesClusterOnInterrupt(t *testing.T) {
	t.Parallel()
	for _, tc := range []demoCase{
		{"ctrl-c", false, syscall.SIGINT},
		{"ctrl-c piped into a tee that died", true, syscall.SIGINT},
		{"terminal closed", true, syscall.SIGHUP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			demoInterrupted(t, tc)
		})
	}
}

// demo is a running `iasql demo` (what make run runs), in a process group
// of its own.
type demo struct {
	cmd            *exec.Cmd
	printed        string        // its stdout up to "Press Ctrl-C" (all of it if it ended first)
	stdout, stderr io.ReadCloser // the rest of its output
	errs           chan string   // all of stderr, once it ends
}

// launchDemo starts `iasql demo` and reads its stdout until it says it is
// up; the test must end its process group.
func launchDemo(t *testing.T) *demo {
	t.Helper()
	d := &demo{cmd: testkit.Command(context.Background(), t, "", "demo", "--log-level", "warn"), errs: make(chan string, 1)}
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var err error
	if d.stdout, err = d.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if d.stderr, err = d.cmd.StderrPipe(); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b, _ := io.ReadAll(d.stderr); d.errs <- string(b) }()
	var out strings.Builder
	sc := bufio.NewScanner(d.stdout)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "Press Ctrl-C") {
			break
		}
	}
	d.printed = out.String()
	return d
}

func demoInterrupted(t *testing.T, tc demoCase) {
	d := launchDemo(t)
	cmd, stdout, stderr, errs := d.cmd, d.stdout, d.stderr, d.errs
	pgid := cmd.Process.Pid
	defer func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }()
	// The demo says how to connect.
	var dsn string
	for _, line := range strings.Split(d.printed, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, `psql "`) {
			dsn = strings.Trim(strings.TrimPrefix(line, "psql "), `"`)
		}
	}
	if dsn == "" {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		t.Fatalf("the demo did not start: %s", <-errs)
	}
	var dataDir string
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	err = conn.QueryRow(ctx, `SHOW data_directory`).Scan(&dataDir)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pidFile, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	postmaster, err := strconv.Atoi(strings.SplitN(string(pidFile), "\n", 2)[0])
	if err != nil {
		t.Fatalf("postmaster.pid: %v", err)
	}
	if tc.closeOutput {
		_ = stdout.Close()
		_ = stderr.Close()
	} else {
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
	}
	if err := syscall.Kill(-pgid, tc.signal); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(2 * time.Minute):
		t.Fatal("the demo did not exit within 2 minutes of the signal")
	}
	if err != nil && !tc.closeOutput {
		t.Errorf("demo after %s: %v", tc.signal, err)
	}
	if alive(postmaster) {
		t.Errorf("postgres (pid %d) still runs after the demo exited", postmaster)
	}
	if _, err := os.Stat(filepath.Dir(dataDir)); !os.IsNotExist(err) {
		t.Errorf("the cluster directory %s is still there (%v)", filepath.Dir(dataDir), err)
	}
}

// alive reports whether pid is a running process (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
