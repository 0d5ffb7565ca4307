// Package pgcluster starts and stops throwaway PostgreSQL clusters from the
// installed server binaries, for tests, benchmarks and the demo.
//
// A cluster lives in a temporary directory, listens on loopback only, on a
// free port, with wal_level = logical. When the process runs as root the
// server runs as an unprivileged user (initdb and postgres refuse root).
package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Options configures a cluster. The zero value is a sensible test cluster.
type Options struct {
	// BinDir holds initdb, pg_ctl and postgres. Empty means: ask pg_config,
	// then look under /usr/lib/postgresql/*/bin for the newest version.
	BinDir string
	// Durable keeps fsync on. Tests leave it off: a crashed server process
	// still loses nothing because the kernel keeps the written WAL.
	Durable bool
	// Settings are extra postgresql.conf lines, name to value.
	Settings map[string]string
}

// Cluster is a running throwaway cluster.
type Cluster struct {
	Dir     string // base directory: data/, socket and log live below it
	Port    int
	BinDir  string
	User    string // the bootstrap superuser
	runAs   *syscall.Credential
	dataDir string
	logFile string
}

// Start runs initdb into a new temporary directory and starts the server.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	bin := opts.BinDir
	if bin == "" {
		var err error
		if bin, err = FindBinDir(); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "iasql-pg-")
	if err != nil {
		return nil, fmt.Errorf("create cluster directory: %w", err)
	}
	c := &Cluster{Dir: dir, BinDir: bin, User: "postgres", dataDir: filepath.Join(dir, "data"), logFile: filepath.Join(dir, "server.log")}
	if os.Geteuid() == 0 {
		cred, err := unprivileged()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		c.runAs = cred
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("chown cluster directory: %w", err)
		}
	}
	if err := c.run(ctx, "initdb", "-D", c.dataDir, "-U", c.User, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c.Port = port
	settings := map[string]string{
		"listen_addresses":        "'127.0.0.1'",
		"port":                    strconv.Itoa(port),
		"unix_socket_directories": "'" + dir + "'",
		"wal_level":               "logical",
		"max_replication_slots":   "20",
		"max_wal_senders":         "20",
		"max_connections":         "200",
		"fsync":                   "off",
		"full_page_writes":        "off",
		"shared_buffers":          "128MB",
		"wal_sender_timeout":      "10s",
		"logging_collector":       "off",
		"log_min_messages":        "warning",
	}
	if opts.Durable {
		settings["fsync"] = "on"
		settings["full_page_writes"] = "on"
	}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	if err := c.writeConf(settings); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		// pg_ctl may have been stopped (ctx ended) after it started the
		// server: stop that before removing its files.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
		_ = c.Stop(sctx, "immediate")
		cancel()
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// FindBinDir locates the PostgreSQL server binaries (15 or newer).
func FindBinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		d := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if version(d) < 15 {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL 15+ server binaries found: install them (Debian: apt-get install postgresql-15) or run 'make deps'")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// DSN returns a connection string for database db as the bootstrap superuser.
func (c *Cluster) DSN(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", c.User, c.Port, db)
}

// Start starts a stopped cluster and waits until it accepts connections.
func (c *Cluster) Start(ctx context.Context) error {
	return c.run(ctx, "pg_ctl", "-D", c.dataDir, "-l", c.logFile, "-w", "-t", "60", "start")
}

// Stop stops the server. Mode is pg_ctl's: "fast", or "immediate" to crash it
// (no shutdown checkpoint; the next start runs crash recovery).
func (c *Cluster) Stop(ctx context.Context, mode string) error {
	return c.run(ctx, "pg_ctl", "-D", c.dataDir, "-m", mode, "-w", "-t", "60", "stop")
}

// Restart stops the server with mode and starts it again.
func (c *Cluster) Restart(ctx context.Context, mode string) error {
	if err := c.Stop(ctx, mode); err != nil {
		return err
	}
	return c.Start(ctx)
}

// Destroy stops the server (immediately) and removes every file.
func (c *Cluster) Destroy() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_ = c.Stop(ctx, "immediate")
	return os.RemoveAll(c.Dir)
}

// Log returns the server log, for diagnosing a failed test.
func (c *Cluster) Log() string {
	b, _ := os.ReadFile(c.logFile)
	return string(b)
}

// Bin returns the path of a program in the server's bin directory.
func (c *Cluster) Bin(name string) string { return filepath.Join(c.BinDir, name) }

// Command builds a command for a server program, run as the cluster's OS
// user when the process is root, in a process group of its own: a Ctrl-C
// at the terminal (SIGINT to the foreground group) reaches the program that
// owns the cluster, which then stops it, and never a pg_ctl halfway through
// (the server itself leaves the group: pg_ctl starts it in a session of its
// own).
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.Bin(name), args...)
	cmd.Dir = c.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if c.runAs != nil {
		cmd.SysProcAttr.Credential = c.runAs
		cmd.Env = append(os.Environ(), "HOME="+c.Dir)
	}
	return cmd
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := c.Command(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if name == "pg_ctl" {
			if b, rerr := os.ReadFile(c.logFile); rerr == nil {
				msg += "\nserver log:\n" + tail(string(b), 2000)
			}
		}
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return nil
}

func (c *Cluster) writeConf(settings map[string]string) error {
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("\n# written by pgcluster\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, settings[k])
	}
	f, err := os.OpenFile(filepath.Join(c.dataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open postgresql.conf: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(b.String()); err != nil {
		return fmt.Errorf("write postgresql.conf: %w", err)
	}
	return nil
}

func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and no unprivileged user (postgres or nobody) exists to run the server: create one (useradd postgres)")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
