package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/launch"
	"github.com/iasql/iasql/logical"
)

// sidecar is a running process that streams a slot: `iasql run`, or
// pg_recvlogical for the decoding variant (see startRecvlogical).
type sidecar struct {
	cmd     *exec.Cmd
	name    string         // in CPU figures: "sidecar", "pg_recvlogical"
	what    string         // in messages: "the sidecar", "pg_recvlogical"
	stopSig syscall.Signal // what makes it exit cleanly
	stopped atomic.Bool    // the bench has sent stopSig
	slot    string
	started time.Time
	done    chan struct{} // closed when the process has exited
	waitErr error         // its exit status, once done is closed
}

// startSidecar starts the sidecar against database db; its log goes to the
// bench's stderr, each line prefixed. It captures only (no module is
// installed); what AWS calls it makes go to the bench's emulator.
func (b *bench) startSidecar(ctx context.Context, db string) (*sidecar, error) {
	return b.startSidecarAt(ctx, b.emuURL, db)
}

// startSidecarAt starts the sidecar against database db with the AWS
// endpoint endpoint and the further flags of iasql run in args; its log
// goes to the bench's stderr, each line prefixed.
func (b *bench) startSidecarAt(ctx context.Context, endpoint, db string, args ...string) (*sidecar, error) {
	cmd := launch.Command(ctx, endpoint, b.iasqlBin, append([]string{"run", "--dsn", b.cluster.DSN(db)}, args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	w := &linePrefixer{w: b.log, prefix: "  sidecar | "}
	cmd.Stdout, cmd.Stderr = w, w
	s := &sidecar{cmd: cmd, name: "sidecar", what: "the sidecar", stopSig: syscall.SIGTERM, slot: logical.SlotName(db)}
	if err := s.start(); err != nil {
		return nil, fmt.Errorf("start sidecar %s: %w", b.iasqlBin, err)
	}
	return s, nil
}

// start starts s.cmd and follows its exit.
func (s *sidecar) start() error {
	s.done = make(chan struct{})
	s.started = time.Now()
	if err := s.cmd.Start(); err != nil {
		return err
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	return nil
}

// exited returns an error when the process has exited.
func (s *sidecar) exited() error {
	select {
	case <-s.done:
		if s.waitErr != nil {
			return fmt.Errorf("%s exited unexpectedly (%w); see its log above", s.what, s.waitErr)
		}
		return fmt.Errorf("%s exited unexpectedly with status 0; see its log above", s.what)
	default:
		return nil
	}
}

// stop sends its stop signal (SIGTERM, SIGINT) and waits for a clean exit.
func (s *sidecar) stop() error {
	if err := s.exited(); err != nil {
		return err
	}
	s.stopped.Store(true)
	if err := s.cmd.Process.Signal(s.stopSig); err != nil {
		return fmt.Errorf("stop %s: %w", s.name, err)
	}
	t := time.NewTimer(20 * time.Second)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		_ = s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("%s did not stop within 20s of %s", s.what, sigName(s.stopSig))
	}
	if s.waitErr != nil {
		return fmt.Errorf("%s exited with %w after %s; see its log above", s.what, s.waitErr, sigName(s.stopSig))
	}
	return nil
}

// kill ends the process if it still runs, for cleanup after a failure.
func (s *sidecar) kill() {
	select {
	case <-s.done:
	default:
		s.stopped.Store(true)
		_ = s.cmd.Process.Signal(s.stopSig)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	}
}

// sigName names the stop signals.
func sigName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return sig.String()
}

// procs returns the processes that capture: the sidecar (or
// pg_recvlogical), the walsender that streams its slot, and the backend
// that writes its audit rows (the sidecar's only).
func (s *sidecar) procs(ctx context.Context, conn *pgx.Conn) (*procSet, error) {
	var walsender, backend int
	err := conn.QueryRow(ctx, `
		SELECT coalesce((SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1), 0),
		       coalesce((SELECT pid FROM pg_stat_activity
		                  WHERE backend_type = 'client backend' AND application_name = 'iasql capture'
		                    AND datname = current_database() LIMIT 1), 0)`, s.slot).Scan(&walsender, &backend)
	if err != nil {
		return nil, fmt.Errorf("find the capture processes: %w", err)
	}
	p := &procSet{}
	p.add(s.name, s.cmd.Process.Pid)
	if walsender != 0 {
		p.add("walsender", walsender)
	}
	if backend != 0 {
		p.add("its backend", backend)
	}
	return p, nil
}

// poll calls cond every interval until it reports true. It fails after
// timeout, and at once when sc (if not nil) exits.
func poll(ctx context.Context, every, timeout time.Duration, what string, sc *sidecar, cond func(context.Context) (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond(ctx)
		if err != nil {
			return fmt.Errorf("wait for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if sc != nil {
			if err := sc.exited(); err != nil {
				return fmt.Errorf("wait for %s: %w", what, err)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not happen within %s", what, timeout)
		}
		if err := sleep(ctx, every); err != nil {
			return fmt.Errorf("wait for %s: %w", what, err)
		}
	}
}

// slotActive reports whether a walsender streams from slot. (A slot is
// active too while a backend creates it, before anything streams.)
func slotActive(ctx context.Context, conn *pgx.Conn, slot string) (bool, error) {
	var active bool
	err := conn.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM pg_replication_slots s JOIN pg_stat_replication r ON r.pid = s.active_pid
		                WHERE s.slot_name = $1)`, slot).Scan(&active)
	if err != nil {
		return false, fmt.Errorf("read slot %s: %w", slot, err)
	}
	return active, nil
}

// waitActive waits until a consumer streams from slot and returns when it
// was first seen streaming.
func waitActive(ctx context.Context, conn *pgx.Conn, slot string, every, timeout time.Duration, sc *sidecar) (time.Time, error) {
	var at time.Time
	err := poll(ctx, every, timeout, "slot "+slot+" to become active", sc, func(ctx context.Context) (bool, error) {
		ok, err := slotActive(ctx, conn, slot)
		if ok {
			at = time.Now()
		}
		return ok, err
	})
	return at, err
}

// waitInactive waits until no process holds slot.
func waitInactive(ctx context.Context, conn *pgx.Conn, slot string) error {
	return poll(ctx, 20*time.Millisecond, 15*time.Second, "slot "+slot+" to be released", nil, func(ctx context.Context) (bool, error) {
		var held bool
		err := conn.QueryRow(ctx, `SELECT coalesce((SELECT active FROM pg_replication_slots WHERE slot_name = $1), false)`, slot).Scan(&held)
		if err != nil {
			return false, fmt.Errorf("read slot %s: %w", slot, err)
		}
		return !held, nil
	})
}

// mark inserts marker row id into bench_marker (a registered table in the
// sidecar runs); its audit row means capture has got that far.
func mark(ctx context.Context, conn *pgx.Conn, id int) error {
	if _, err := conn.Exec(ctx, `INSERT INTO bench_marker (id) VALUES ($1)`, id); err != nil {
		return fmt.Errorf("insert marker %d: %w", id, err)
	}
	return nil
}

func marked(ctx context.Context, conn *pgx.Conn, id int) (bool, error) {
	var ok bool
	err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM iasql_audit_log WHERE table_name = 'bench_marker' AND record_id = $1)`, fmt.Sprint(id)).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look for marker %d in iasql_audit_log: %w", id, err)
	}
	return ok, nil
}

// waitMarked waits until marker id is in the audit log and returns when it
// was first seen there.
func waitMarked(ctx context.Context, conn *pgx.Conn, id int, every, timeout time.Duration, sc *sidecar) (time.Time, error) {
	var at time.Time
	err := poll(ctx, every, timeout, fmt.Sprintf("the sidecar to capture marker %d", id), sc, func(ctx context.Context) (bool, error) {
		ok, err := marked(ctx, conn, id)
		if ok {
			at = time.Now()
		}
		return ok, err
	})
	return at, err
}

// linePrefixer writes whole lines to w, each with prefix, but those skip
// (if set) reports true for. exec.Cmd calls Write from one goroutine when
// Stdout and Stderr are the same writer.
type linePrefixer struct {
	w      io.Writer
	prefix string
	skip   func(line []byte) bool
	buf    []byte
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		if p.skip == nil || !p.skip(p.buf[:i]) {
			fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		}
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}
