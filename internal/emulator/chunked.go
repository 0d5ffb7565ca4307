package emulator

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// decodeAWSChunked turns a request whose body is in the aws-chunked
// encoding (x-amz-content-sha256: STREAMING-..., what SDKs send for
// streamed uploads and trailing checksums) into a plain one, so gofakes3
// stores the payload and not its framing. Chunk signatures and trailing
// checksums are not verified.
func decodeAWSChunked(r *http.Request) error {
	sha := r.Header.Get("X-Amz-Content-Sha256")
	if !strings.HasPrefix(sha, "STREAMING-") && !hasToken(r.Header.Get("Content-Encoding"), "aws-chunked") {
		return nil
	}
	n, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64)
	if err != nil || n < 0 {
		return errors.New("aws-chunked request without a valid x-amz-decoded-content-length")
	}
	r.Body = &chunkedBody{r: bufio.NewReader(r.Body), c: r.Body}
	r.ContentLength = n
	r.Header.Set("Content-Length", strconv.FormatInt(n, 10))
	r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	r.Header.Del("X-Amz-Decoded-Content-Length")
	r.Header.Del("X-Amz-Trailer")
	var enc []string
	for _, t := range strings.Split(r.Header.Get("Content-Encoding"), ",") {
		if t = strings.TrimSpace(t); t != "" && !strings.EqualFold(t, "aws-chunked") {
			enc = append(enc, t)
		}
	}
	if len(enc) == 0 {
		r.Header.Del("Content-Encoding")
	} else {
		r.Header.Set("Content-Encoding", strings.Join(enc, ","))
	}
	return nil
}

func hasToken(header, token string) bool {
	for _, t := range strings.Split(header, ",") {
		if strings.EqualFold(strings.TrimSpace(t), token) {
			return true
		}
	}
	return false
}

// chunkedBody reads the payload of an aws-chunked body:
// hex-size[;chunk-signature=...]\r\n data \r\n ... 0[;...]\r\n trailers \r\n.
type chunkedBody struct {
	r      *bufio.Reader
	c      io.Closer
	remain int64 // bytes left in the current chunk
	done   bool
	err    error
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.done {
		return 0, io.EOF
	}
	if b.remain == 0 {
		if err := b.nextChunk(); err != nil {
			b.err = err
			return 0, err
		}
		if b.done {
			return 0, io.EOF
		}
	}
	if int64(len(p)) > b.remain {
		p = p[:b.remain]
	}
	n, err := b.r.Read(p)
	b.remain -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && b.remain == 0 {
		err = b.expectCRLF()
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

// nextChunk reads a chunk header; on the last (empty) chunk it reads the
// trailers and marks the body done.
func (b *chunkedBody) nextChunk() error {
	line, err := b.line()
	if err != nil {
		return err
	}
	size, _, _ := strings.Cut(line, ";")
	n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("aws-chunked: bad chunk header %q", line)
	}
	if n > 0 {
		b.remain = n
		return nil
	}
	for { // trailers, up to an empty line or the end
		line, err := b.line()
		if err == io.ErrUnexpectedEOF || err == nil && line == "" {
			break
		}
		if err != nil {
			return err
		}
	}
	b.done = true
	return nil
}

func (b *chunkedBody) line() (string, error) {
	s, err := b.r.ReadString('\n')
	if err == io.EOF {
		if s == "" {
			return "", io.ErrUnexpectedEOF
		}
		err = nil
	}
	return strings.TrimRight(s, "\r\n"), err
}

func (b *chunkedBody) expectCRLF() error {
	line, err := b.line()
	if err != nil {
		return err
	}
	if line != "" {
		return errors.New("aws-chunked: chunk longer than its size")
	}
	return nil
}

func (b *chunkedBody) Close() error { return b.c.Close() }
