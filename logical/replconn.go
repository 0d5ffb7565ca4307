package logical

import (
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// readWindow is how long the replication socket lets data gather before it
// reads again while the stream is busy. PostgreSQL sends each pgoutput
// message (begin, change, commit) as a packet of its own; reading them as
// they come costs a read, a park and a wake-up of the process per message,
// which was most of the sidecar's CPU under a stream of small transactions.
// Waiting this long between reads makes one read take all the messages of
// the window. It is the pause that commits a batch: a message waits no
// longer than that for its batch to be noticed complete, and a pause is
// still told from a stream whose next message is already there.
const readWindow = 2 * time.Millisecond

// replConn is the replication connection's socket. It batches reads while
// the stream is busy (see readWindow) and sets the receive deadline on the
// socket only when it reads from it: the receive loop states the deadline
// it wants before every message (setDeadline, a store), while most messages
// come from what pgconn has buffered already.
//
// Reads are serialized by pgconn (its background reader included); the
// deadline and the interruption may come from other goroutines.
type replConn struct {
	net.Conn
	window time.Duration
	raw    syscall.RawConn // nil: reads are not batched

	want  atomic.Int64 // wanted read deadline, UnixNano; 0: none
	ext   atomic.Int64 // deadline pgconn set (SetReadDeadline), UnixNano; 0: none
	armed atomic.Int64 // the deadline set on the socket; -1: unknown
	kick  atomic.Bool  // interrupt: the next read returns a timeout

	arrived atomic.Int64 // about when the data last read arrived, UnixNano

	// owned by the (serialized) reader
	lastEnd time.Time // when the last read returned
	busy    bool      // it found data waiting and did not fill the buffer
	lowat   int       // the socket's receive low-water mark (0: the default, 1)
}

func newReplConn(c net.Conn, window time.Duration) *replConn {
	r := &replConn{Conn: c, window: window}
	r.armed.Store(-1)
	if window > 0 {
		r.raw = rawConn(c)
	}
	return r
}

// setDeadline states the deadline of the next reads (the zero time: none).
func (c *replConn) setDeadline(t time.Time) { c.want.Store(unixNano(t)) }

// arrival returns about when the data last read arrived: when the read
// returned, or within the window it gathered.
func (c *replConn) arrival() time.Time { return time.Unix(0, c.arrived.Load()) }

// interrupt makes the current read, or else the next one, return a timeout
// error, from any goroutine.
func (c *replConn) interrupt() {
	c.kick.Store(true)
	c.armed.Store(-1)
	_ = c.Conn.SetReadDeadline(time.Now())
}

// SetReadDeadline is pgconn's own use of the deadline (its context
// watcher, while a call with a context runs): reads keep to the earlier of
// it and the wanted one until it is cleared.
func (c *replConn) SetReadDeadline(t time.Time) error {
	c.ext.Store(unixNano(t))
	c.armed.Store(-1)
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline: as SetReadDeadline.
func (c *replConn) SetDeadline(t time.Time) error {
	c.ext.Store(unixNano(t))
	c.armed.Store(-1)
	return c.Conn.SetDeadline(t)
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func (c *replConn) Read(b []byte) (int, error) {
	gather := c.busy && c.raw != nil
	if gather {
		// More is coming: let it gather, but not past the deadline, and
		// without waking up for every packet meanwhile.
		c.lowWater(gatherLowWater)
		until := c.lastEnd.Add(c.window).UnixNano()
		if want := c.deadline(); want != 0 && want < until {
			until = want
		}
		if d := until - time.Now().UnixNano(); d > 0 {
			time.Sleep(time.Duration(d))
		}
	}
	if c.kick.Swap(false) {
		c.armed.Store(-1)
		c.busy = false
		return 0, os.ErrDeadlineExceeded
	}
	now := time.Now()
	var want, arm int64
	for {
		ext := c.ext.Load()
		want = c.deadline()
		arm = want
		if gather && want != 0 && want <= now.UnixNano() {
			// The deadline has passed while gathering: take what has come,
			// without a deadline that would refuse to read it.
			arm = 0
		}
		if c.armed.Load() != arm {
			c.armed.Store(arm)
			var t time.Time
			if arm != 0 {
				t = time.Unix(0, arm)
			}
			if err := c.Conn.SetReadDeadline(t); err != nil {
				c.armed.Store(-1)
				return 0, err
			}
		}
		if c.ext.Load() == ext {
			break
		}
		// pgconn set a deadline meanwhile: take it into account.
		c.armed.Store(-1)
	}
	if gather {
		n, err := c.readNow(b)
		if n > 0 || err != nil {
			return c.done(n, len(b), err, now, true)
		}
		if arm != want {
			// Nothing came until the deadline.
			c.busy = false
			return 0, os.ErrDeadlineExceeded
		}
	}
	// A read that may wait must wake at the first byte.
	c.lowWater(1)
	n, err := c.Conn.Read(b)
	return c.done(n, len(b), err, now, false)
}

// deadline is the earlier of the wanted deadline and pgconn's, 0 for none.
func (c *replConn) deadline() int64 {
	want, ext := c.want.Load(), c.ext.Load()
	if ext != 0 && (want == 0 || ext < want) {
		return ext
	}
	return want
}

// gatherLowWater is the socket's receive low-water mark while data gathers
// (SO_RCVLOWAT): below it, arriving data does not wake the process up (the
// runtime's network poller would otherwise wake for every packet, even with
// no read waiting). Reads without waiting return whatever is there.
const gatherLowWater = 16 << 10

// done records how a read went: the stream is busy when data was waiting
// (the read did not wait for a whole window) and less than half a buffer of
// it (a backlog is read at full speed).
func (c *replConn) done(n, size int, err error, start time.Time, gathered bool) (int, error) {
	prev := c.lastEnd
	c.lastEnd = time.Now()
	if n > 0 {
		at := c.lastEnd
		if gathered {
			// It came at some point of the window: say its middle.
			at = prev.Add(c.lastEnd.Sub(prev) / 2)
		}
		c.arrived.Store(at.UnixNano())
	}
	c.busy = err == nil && n > 0 && n < size/2 && c.lastEnd.Sub(start) < c.window
	if err != nil {
		// A timeout may have come from interrupt: set the deadline again.
		c.armed.Store(-1)
	}
	return n, err
}
