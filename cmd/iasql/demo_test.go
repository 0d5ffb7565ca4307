package main_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/launch"
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

func demoInterrupted(t *testing.T, tc demoCase) {
	cmd := launch.Command(context.Background(), "", bin, "demo", "--log-level", "warn")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	defer func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }()
	errs := make(chan string, 1)
	go func() { b, _ := io.ReadAll(stderr); errs <- string(b) }()
	// Read until the demo says how to connect and that it is up.
	var dsn string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, `psql "`) {
			dsn = strings.Trim(strings.TrimPrefix(line, "psql "), `"`)
		}
		if strings.HasPrefix(line, "Press Ctrl-C") {
			break
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
