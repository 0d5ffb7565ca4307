package logical

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// tcpPair is a replConn over a loopback TCP connection (wrapped by wrap,
// when not nil) and the connection's other end.
func tcpPair(t *testing.T, wrap func(*net.TCPConn) net.Conn) (client *replConn, server net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() { c, _ := l.Accept(); accepted <- c }()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	var conn net.Conn = c
	if wrap != nil {
		conn = wrap(c.(*net.TCPConn))
	}
	client = newReplConn(conn, readWindow)
	t.Cleanup(func() { c.Close(); server.Close() })
	return client, server
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Reads batched while the stream is busy still deliver every byte in order,
// and a quiet stream times out at the wanted deadline.
func TestReplConnBatchedReads(t *testing.T) {
	c, srv := tcpPair(t, nil)
	var want bytes.Buffer
	go func() {
		for i := 0; i < 300; i++ {
			msg := bytes.Repeat([]byte{byte(i)}, 1+i%50)
			_, _ = srv.Write(msg)
			time.Sleep(50 * time.Microsecond)
		}
	}()
	for i := 0; i < 300; i++ {
		want.Write(bytes.Repeat([]byte{byte(i)}, 1+i%50))
	}
	c.setDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, want.Len())
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatal("bytes differ")
	}
	start := time.Now()
	c.setDeadline(start.Add(30 * time.Millisecond))
	_, err := c.Read(make([]byte, 8192))
	if !isTimeout(err) {
		t.Fatalf("read on a quiet stream: %v, want a timeout", err)
	}
	if d := time.Since(start); d < 25*time.Millisecond || d > 2*time.Second {
		t.Fatalf("timed out after %s, want about 30ms", d)
	}
}

// interrupt ends a blocked read, or else the next one; a deadline pgconn
// sets itself is kept while the receive loop wants a later one.
func TestReplConnInterrupt(t *testing.T) {
	reading := make(chan struct{})
	c, srv := tcpPair(t, func(tc *net.TCPConn) net.Conn { return &enteringConn{TCPConn: tc, reading: reading} })
	c.setDeadline(time.Now().Add(time.Minute))
	go func() { <-reading; c.interrupt() }() // once the read waits on the socket
	if _, err := c.Read(make([]byte, 10)); !isTimeout(err) {
		t.Fatalf("interrupted read: %v, want a timeout", err)
	}
	c.interrupt() // no read running: the next one returns at once
	if _, err := c.Read(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after an interrupt: %v, want a timeout", err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Millisecond)) // as pgconn's context watcher does
	if _, err := c.Read(make([]byte, 10)); !isTimeout(err) {
		t.Fatalf("read past pgconn's deadline: %v, want a timeout", err)
	}
	_ = c.SetDeadline(time.Time{})
	_, _ = srv.Write([]byte("x"))
	if n, err := c.Read(make([]byte, 10)); n != 1 || err != nil {
		t.Fatalf("read after pgconn cleared its deadline: %d, %v", n, err)
	}
}

// enteringConn closes reading when a read of the socket first starts.
type enteringConn struct {
	*net.TCPConn
	reading chan struct{}
	once    sync.Once
}

func (c *enteringConn) Read(b []byte) (int, error) {
	c.once.Do(func() { close(c.reading) })
	return c.TCPConn.Read(b)
}
