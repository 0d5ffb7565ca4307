//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package logical

import (
	"net"
	"syscall"
)

// rawConn: reads are not batched on this platform.
func rawConn(net.Conn) syscall.RawConn { return nil }

func (c *replConn) readNow([]byte) (int, error) { return 0, nil }

func (c *replConn) lowWater(int) {}
