package logical

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgproto3"
)

// part is a piece of a synthetic backend stream: bytes, then fill bytes of
// 'x' made up as they are read (so a 100 MB message costs the test nothing).
type part struct {
	data []byte
	fill int64
}

type synth struct{ parts []part }

var xs = bytes.Repeat([]byte{'x'}, 32<<10)

func (s *synth) Read(b []byte) (int, error) {
	for len(s.parts) > 0 {
		p := &s.parts[0]
		if len(p.data) > 0 {
			n := copy(b, p.data)
			p.data = p.data[n:]
			return n, nil
		}
		if p.fill > 0 {
			n := copy(b[:min(int64(len(b)), p.fill)], xs)
			p.fill -= int64(n)
			return n, nil
		}
		s.parts = s.parts[1:]
	}
	return 0, io.EOF
}

// frameHead is a backend message's header for a body of n bytes.
func frameHead(typ byte, n int64) []byte {
	return binary.BigEndian.AppendUint32([]byte{typ}, uint32(n+4))
}

// xlog is XLogData's start ('w', WAL start and end, send time).
func xlog(lsn uint64) []byte {
	b := binary.BigEndian.AppendUint64([]byte{'w'}, lsn)
	b = binary.BigEndian.AppendUint64(b, lsn)
	return binary.BigEndian.AppendUint64(b, 12345)
}

// message is a CopyData carrying pgoutput's logical-decoding message with
// content bytes of 'x' (proto_version 1).
func message(lsn uint64, prefix string, content int64) part {
	m := append([]byte{'M', 0}, binary.BigEndian.AppendUint64(nil, lsn)...)
	m = append(append(m, prefix...), 0)
	m = binary.BigEndian.AppendUint32(m, uint32(content))
	body := append(xlog(lsn), m...)
	return part{data: append(frameHead('d', int64(len(body))+content), body...), fill: content}
}

// insert is a CopyData carrying an insert of one text column of n bytes.
func insert(lsn uint64, n int) []byte {
	m := binary.BigEndian.AppendUint32([]byte{'I'}, 16384)
	m = append(m, 'N')
	m = binary.BigEndian.AppendUint16(m, 1)
	m = append(m, 't')
	m = binary.BigEndian.AppendUint32(m, uint32(n))
	m = append(m, bytes.Repeat([]byte{'r'}, n)...)
	body := append(xlog(lsn), m...)
	return append(frameHead('d', int64(len(body))), body...)
}

func keepalive(lsn uint64) []byte {
	b := binary.BigEndian.AppendUint64([]byte{'k'}, lsn)
	b = binary.BigEndian.AppendUint64(b, 0)
	b = append(b, 0)
	return append(frameHead('d', int64(len(b))), b...)
}

func ready() []byte { return append(frameHead('Z', 1), 'I') }

// flaky reads one byte at a time and times out every third read, as a
// socket under a deadline may.
type flaky struct {
	r     io.Reader
	calls int
}

func (f *flaky) Read(b []byte) (int, error) {
	f.calls++
	if f.calls%3 == 0 {
		return 0, os.ErrDeadlineExceeded
	}
	return f.r.Read(b[:1])
}

// receive decodes what the filter passes on as pgproto3 does, describing
// each message in a line.
func receive(t *testing.T, r io.Reader) []string {
	t.Helper()
	fe := pgproto3.NewFrontend(r, io.Discard)
	var got []string
	for {
		msg, err := fe.Receive()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return got
		}
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		cd, ok := msg.(*pgproto3.CopyData)
		if !ok {
			got = append(got, fmt.Sprintf("%T", msg))
			continue
		}
		switch cd.Data[0] {
		case 'k':
			got = append(got, "keepalive")
		case 'w':
			x, err := pglogrepl.ParseXLogData(cd.Data[1:])
			if err != nil {
				t.Fatal(err)
			}
			m, err := pglogrepl.Parse(x.WALData)
			if err != nil {
				t.Fatalf("after %v: parse %q: %v", got, x.WALData[:min(len(x.WALData), 64)], err)
			}
			switch m := m.(type) {
			case *pglogrepl.LogicalDecodingMessage:
				got = append(got, fmt.Sprintf("message %q at %d (wal %d): %d bytes, all x %v", m.Prefix, m.LSN, x.WALStart, len(m.Content), strings.Trim(string(m.Content), "x") == ""))
			case *pglogrepl.InsertMessage:
				got = append(got, fmt.Sprintf("insert at %d: %d bytes, all r %v", x.WALStart, len(m.Tuple.Columns[0].Data), strings.Trim(string(m.Tuple.Columns[0].Data), "r") == ""))
			default:
				t.Fatalf("unexpected %T", m)
			}
		}
	}
}

type cutLine struct {
	prefix  string
	lsn     uint64
	dropped int64
}

// TestMsgFilter: a logical-decoding message past MaxMessageBytes (or with
// a prefix past maxMessagePrefix) reaches pgproto3 with an empty content,
// its content discarded as it streams past (the filter's allocations stay
// far below it); everything else passes unchanged, rows larger than the
// limit included, however the stream is split into reads.
func TestMsgFilter(t *testing.T) {
	const mb = 1 << 20
	long := strings.Repeat("p", 1000)
	tests := []struct {
		name     string
		parts    []part
		flaky    bool
		want     []string
		cuts     []cutLine
		maxAlloc uint64 // bytes allocated while receiving it all; 0: not checked
	}{
		{
			name: "a forged 100 MB request",
			parts: []part{
				message(10, "iasql_request", 5),
				message(20, "iasql_request", 100*mb),
				{data: keepalive(30)},
				message(40, "iasql_request", 7),
				{data: ready()},
			},
			want: []string{
				`message "iasql_request" at 10 (wal 10): 5 bytes, all x true`,
				`message "iasql_request" at 20 (wal 20): 0 bytes, all x true`,
				`keepalive`,
				`message "iasql_request" at 40 (wal 40): 7 bytes, all x true`,
				`*pgproto3.ReadyForQuery`,
			},
			cuts:     []cutLine{{"iasql_request", 20, 100 * mb}},
			maxAlloc: mb,
		},
		{
			name: "at the limit, past it, a long prefix, a large row",
			parts: []part{
				message(10, "iasql_request", MaxMessageBytes),
				message(20, "iasql_request", MaxMessageBytes+1),
				message(30, long, 10),
				message(35, strings.Repeat("q", maxMessagePrefix), 3),
				{data: insert(40, 3*MaxMessageBytes)},
				message(50, "iasql_engine", 9),
			},
			want: []string{
				fmt.Sprintf(`message "iasql_request" at 10 (wal 10): %d bytes, all x true`, MaxMessageBytes),
				`message "iasql_request" at 20 (wal 20): 0 bytes, all x true`,
				`message "" at 30 (wal 30): 0 bytes, all x true`,
				fmt.Sprintf(`message %q at 35 (wal 35): 3 bytes, all x true`, strings.Repeat("q", maxMessagePrefix)),
				fmt.Sprintf(`insert at 40: %d bytes, all r true`, 3*MaxMessageBytes),
				`message "iasql_engine" at 50 (wal 50): 9 bytes, all x true`,
			},
			cuts: []cutLine{{"iasql_request", 20, MaxMessageBytes + 1}, {"", 30, 1010}},
		},
		{
			name:  "read a byte at a time, with timeouts",
			flaky: true,
			parts: []part{
				message(10, "iasql_request", 2),
				message(20, "iasql_request", MaxMessageBytes+100),
				{data: insert(30, 100)},
				message(40, long, 1),
				{data: keepalive(50)},
			},
			want: []string{
				`message "iasql_request" at 10 (wal 10): 2 bytes, all x true`,
				`message "iasql_request" at 20 (wal 20): 0 bytes, all x true`,
				`insert at 30: 100 bytes, all r true`,
				`message "" at 40 (wal 40): 0 bytes, all x true`,
				`keepalive`,
			},
			cuts: []cutLine{{"iasql_request", 20, MaxMessageBytes + 100}, {"", 40, 1001}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cuts []cutLine
			var r io.Reader = &synth{parts: tc.parts}
			if tc.flaky {
				r = &flaky{r: r}
			}
			f := newMsgFilter(r, func(prefix string, lsn uint64, dropped int64) {
				cuts = append(cuts, cutLine{prefix, lsn, dropped})
			})
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			got := receive(t, f)
			runtime.ReadMemStats(&after)
			if !slices.Equal(got, tc.want) {
				t.Errorf("received\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if !slices.Equal(cuts, tc.cuts) {
				t.Errorf("cut %v, want %v", cuts, tc.cuts)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; tc.maxAlloc > 0 && alloc > tc.maxAlloc {
				t.Errorf("allocated %d bytes receiving the stream, want at most %d", alloc, tc.maxAlloc)
			}
		})
	}
}
