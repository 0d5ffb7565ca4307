//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package logical

import (
	"io"
	"net"
	"os"
	"syscall"
)

// rawConn returns c's socket for reads without waiting, nil where it has
// none (reads are then not batched).
func rawConn(c net.Conn) syscall.RawConn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// readNow reads what the socket holds without waiting; 0, nil when it holds
// nothing.
func (c *replConn) readNow(b []byte) (n int, err error) {
	var errno error
	if err := c.raw.Read(func(fd uintptr) bool {
		n, errno = syscall.Read(int(fd), b)
		return true
	}); err != nil {
		return 0, err
	}
	n = max(n, 0)
	switch {
	case errno == syscall.EAGAIN || errno == syscall.EINTR:
		return 0, nil
	case errno != nil:
		return 0, &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", errno)}
	case n == 0 && len(b) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// lowWater sets the socket's receive low-water mark, where the platform has
// one; failures only cost the batching its benefit.
func (c *replConn) lowWater(n int) {
	if c.lowat == n || c.raw == nil {
		return
	}
	c.lowat = n
	_ = c.raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, n)
	})
}
