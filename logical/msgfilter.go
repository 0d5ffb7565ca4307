package logical

import (
	"bytes"
	"encoding/binary"
	"io"
)

// MaxMessageBytes bounds the content of a logical-decoding message the
// sidecar takes from the replication stream: a larger one reaches the
// decoder with its content cut away (msgFilter). Any role may call
// pg_logical_emit_message, and pgproto3 reads each CopyData whole, so
// without it a single forged 100 MB message costs the sidecar 100 MB (and
// more, as it is copied). The largest legitimate message is a request from
// the SQL API, which iasql_request refuses above 64 KiB
// (bridge.MaxRequestBytes, which must stay below this bound); the rest is
// headroom, so that a request at the limit still reaches the engine, which
// answers it with its own message.
const MaxMessageBytes = 128 << 10

// maxMessagePrefix bounds the prefix of a logical-decoding message that is
// kept: iasql's are a few bytes. A longer one is cut as a large content is
// (the prefix is a C string: its length is known only at its end).
const maxMessagePrefix = 256

// Where pgoutput's logical-decoding message sits in a CopyData of the
// replication stream: 'w' and XLogData's header (WAL start, WAL end, send
// time: 24 bytes), then the message: 'M', flags (Int8), LSN (Int64), the
// prefix (a NUL-terminated String), the content's length (Int32) and the
// content. That is the layout of proto_version 1 without streaming, which
// capture asks for (StartReplication): with streaming (proto_version 2 and
// "streaming 'on'"), a message inside a streamed transaction carries its
// xid (Int32) before the flags, and this filter would have to know which
// transactions are streamed.
const (
	xlogHeaderLen = 1 + 24             // 'w' and XLogData's header
	msgFixedLen   = xlogHeaderLen + 10 // ... 'M', flags and LSN
	backendHeader = 5                  // a backend message's type and length
)

type filterState int

const (
	fHeader  filterState = iota // reading a backend message's header
	fFixed                      // a CopyData: reading up to a message's prefix
	fPrefix                     // reading a message's prefix
	fLength                     // reading a message's content length
	fPass                       // passing the rest of a message on
	fDiscard                    // discarding the rest of a message
)

// msgFilter sits between the replication connection's socket (above TLS)
// and pgproto3, which reads each backend message whole. It parses the
// backend messages' framing as they stream past and, in a CopyData that
// carries a logical-decoding message whose content exceeds MaxMessageBytes
// (or whose prefix exceeds maxMessagePrefix), rewrites the message to carry
// an empty content (and an empty prefix, when it was the prefix that was
// too long), adjusting the CopyData's length, and discards the content as
// it arrives, never holding it. Everything else, row changes of any size
// included, passes on unchanged. Its memory is its read buffer and a few
// hundred bytes of the message being looked at.
//
// An error from the reader below (a deadline) is returned as it is, and the
// filter goes on where it was at the next Read.
type msgFilter struct {
	r   io.Reader
	cut func(prefix string, lsn uint64, dropped int64) // told each cut message

	in        []byte // read buffer; in[i:j] is unread
	i, j      int
	err       error  // the reader's error, returned once in[i:j] is used
	out       []byte // rewritten bytes to return before anything else
	o         int    // out[o:] is still to return
	st        filterState
	held      []byte // the current message so far: header, then the start of its body
	left      int64  // bytes of the current message's body not yet read
	body      int64  // the current message's body length, as sent
	prefixAt  int    // where the prefix starts in held
	prefixCut int64  // prefix bytes not kept (beyond maxMessagePrefix)
	lengthAt  int    // where the content length starts in held
}

// filterReadBuffer is the filter's read buffer. Reads below it are no
// larger than the reads asked of it (the socket's read batching depends on
// their size: replConn).
const filterReadBuffer = 64 << 10

func newMsgFilter(r io.Reader, cut func(prefix string, lsn uint64, dropped int64)) *msgFilter {
	return &msgFilter{r: r, cut: cut, in: make([]byte, filterReadBuffer),
		held: make([]byte, 0, msgFixedLen+backendHeader+maxMessagePrefix+1+4)}
}

func (f *msgFilter) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		if f.o < len(f.out) {
			k := copy(b[n:], f.out[f.o:])
			f.o += k
			n += k
			continue
		}
		f.out, f.o = f.out[:0], 0
		if f.i == f.j {
			if n > 0 {
				return n, nil
			}
			if err := f.err; err != nil {
				f.err = nil
				return 0, err
			}
			k, err := f.r.Read(f.in[:min(len(b), len(f.in))])
			f.i, f.j, f.err = 0, k, err
			if k == 0 && err == nil {
				return 0, nil
			}
			continue
		}
		n += f.step(b[n:])
	}
	return n, nil
}

// step consumes some of in[i:j], writing what passes through to dst or to
// out; it returns how much it wrote to dst.
func (f *msgFilter) step(dst []byte) int {
	avail := f.in[f.i:f.j]
	switch f.st {
	case fPass:
		k := int(min(int64(len(avail)), f.left, int64(len(dst))))
		copy(dst, avail[:k])
		f.i += k
		f.left -= int64(k)
		if f.left == 0 {
			f.st = fHeader
		}
		return k
	case fDiscard:
		k := int(min(int64(len(avail)), f.left))
		f.i += k
		f.left -= int64(k)
		if f.left == 0 {
			f.st = fHeader
		}
		return 0
	case fHeader:
		f.i += f.hold(avail, backendHeader-len(f.held))
		if len(f.held) < backendHeader {
			return 0
		}
		f.left = int64(binary.BigEndian.Uint32(f.held[1:5])) - 4
		f.body = f.left
		switch {
		case f.left < 0: // not a valid frame: pgproto3 will say so
			f.out = append(f.out, f.held...)
			f.held, f.left = f.held[:0], 0
		case f.held[0] == 'd' && f.left >= msgFixedLen+1+4:
			f.st = fFixed
		default:
			f.release(fPass)
		}
	case fFixed:
		f.i += f.hold(avail, backendHeader+msgFixedLen-len(f.held))
		if len(f.held) < backendHeader+msgFixedLen {
			return 0
		}
		body := f.held[backendHeader:]
		if body[0] != 'w' || body[xlogHeaderLen] != 'M' {
			f.release(fPass)
			return 0
		}
		f.st, f.prefixAt, f.prefixCut = fPrefix, len(f.held), 0
	case fPrefix:
		k := int(min(int64(len(avail)), f.left))
		end := bytes.IndexByte(avail[:k], 0)
		if end >= 0 {
			k = end + 1
		}
		keep := min(k, maxMessagePrefix+1-(len(f.held)-f.prefixAt))
		if f.prefixCut > 0 {
			keep = 0
		}
		f.held = append(f.held, avail[:keep]...)
		f.prefixCut += int64(k - keep)
		f.i += k
		f.left -= int64(k)
		switch {
		case end >= 0:
			f.st, f.lengthAt = fLength, len(f.held)
		case f.left == 0: // the body ended inside the prefix: malformed
			f.release(fPass)
		}
	case fLength:
		f.i += f.hold(avail, f.lengthAt+4-len(f.held))
		if len(f.held) < f.lengthAt+4 {
			if f.left == 0 { // malformed
				f.release(fPass)
			}
			return 0
		}
		size := int64(binary.BigEndian.Uint32(f.held[f.lengthAt:]))
		if f.prefixCut == 0 && size <= MaxMessageBytes {
			f.release(fPass)
			return 0
		}
		f.cutMessage()
	}
	return 0
}

// hold moves up to want bytes of avail (and of the current body) into
// held, and returns how many.
func (f *msgFilter) hold(avail []byte, want int) int {
	k := min(len(avail), want)
	if f.st != fHeader {
		k = int(min(int64(k), f.left))
		f.left -= int64(k)
	}
	f.held = append(f.held, avail[:k]...)
	return k
}

// release queues what is held, with the CopyData's length set to what
// will pass (what is held and the rest of the body), and goes on in st.
func (f *msgFilter) release(st filterState) {
	binary.BigEndian.PutUint32(f.held[1:5], uint32(int64(len(f.held)-1)+f.left))
	f.out = append(f.out, f.held...)
	f.held = f.held[:0]
	f.st = st
	if f.left == 0 {
		f.st = fHeader
	}
}

// cutMessage rewrites the held message to carry an empty content (and an
// empty prefix, when the prefix was cut), queues it and discards the rest.
func (f *msgFilter) cutMessage() {
	lsn := binary.BigEndian.Uint64(f.held[backendHeader+xlogHeaderLen+2:])
	prefix := ""
	if f.prefixCut == 0 {
		prefix = string(f.held[f.prefixAt : f.lengthAt-1])
	}
	f.held = append(f.held[:f.prefixAt], prefix...)
	f.held = append(f.held, 0, 0, 0, 0, 0) // the prefix's NUL, an empty content's length
	dropped := f.body - int64(len(f.held)-backendHeader)
	discard := f.left
	f.left = 0
	f.release(fHeader)
	if discard > 0 {
		f.st, f.left = fDiscard, discard
	}
	if f.cut != nil {
		f.cut(prefix, lsn, dropped)
	}
}
