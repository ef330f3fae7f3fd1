package redis

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// RESP2, as the sink uses it. A command is an array of bulk strings:
//
//	*<n>\r\n  then n times  $<len>\r\n<bytes>\r\n
//
// A reply is one of
//
//	+<text>\r\n           simple string (OK, QUEUED)
//	-<text>\r\n           error
//	:<int>\r\n            integer
//	$<len>\r\n<bytes>\r\n bulk string ($-1: nil)
//	*<n>\r\n<n replies>   array (*-1: nil, as EXEC answers after a WATCH failure)

// appendCommand appends one command.
func appendCommand(buf []byte, args ...[]byte) []byte {
	buf = append(buf, '*')
	buf = strconv.AppendInt(buf, int64(len(args)), 10)
	buf = append(buf, '\r', '\n')
	for _, a := range args {
		buf = append(buf, '$')
		buf = strconv.AppendInt(buf, int64(len(a)), 10)
		buf = append(buf, '\r', '\n')
		buf = append(buf, a...)
		buf = append(buf, '\r', '\n')
	}
	return buf
}

// replyError is an error reply (-ERR ...).
type replyError string

func (e replyError) Error() string { return "redis: " + string(e) }

// reply is a decoded reply: Err for an error, Array for an array, else Str.
type reply struct {
	Str   string
	Int   int64
	Nil   bool
	Err   replyError
	Array []reply
}

// maxBulk bounds a bulk reply and maxDepth nesting, so a bad server cannot make the reader
// allocate without end.
const (
	maxBulk  = 1 << 20 // the sink reads only short replies (OK, QUEUED, integers)
	maxArray = 1 << 20
	maxDepth = 8
)

var errProtocol = errors.New("redis: protocol error")

func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: line too long", errProtocol)
		}
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line without CRLF", errProtocol)
	}
	return line[:len(line)-2], nil
}

// readReply reads one reply.
func readReply(r *bufio.Reader) (reply, error) { return readReplyDepth(r, 0) }

func readReplyDepth(r *bufio.Reader, depth int) (reply, error) {
	if depth > maxDepth {
		return reply{}, fmt.Errorf("%w: nested too deep", errProtocol)
	}
	line, err := readLine(r)
	if err != nil {
		return reply{}, err
	}
	if len(line) == 0 {
		return reply{}, fmt.Errorf("%w: empty line", errProtocol)
	}
	body := string(line[1:])
	switch line[0] {
	case '+':
		return reply{Str: body}, nil
	case '-':
		return reply{Err: replyError(body)}, nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return reply{}, fmt.Errorf("%w: integer %q", errProtocol, body)
		}
		return reply{Int: n}, nil
	case '$':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil || n < -1 || n > maxBulk {
			return reply{}, fmt.Errorf("%w: bulk length %q", errProtocol, body)
		}
		if n == -1 {
			return reply{Nil: true}, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return reply{}, err
		}
		if b[n] != '\r' || b[n+1] != '\n' {
			return reply{}, fmt.Errorf("%w: bulk without CRLF", errProtocol)
		}
		return reply{Str: string(b[:n])}, nil
	case '*':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil || n < -1 || n > maxArray {
			return reply{}, fmt.Errorf("%w: array length %q", errProtocol, body)
		}
		if n == -1 {
			return reply{Nil: true}, nil
		}
		out := reply{Array: make([]reply, 0, min(n, 1024))}
		for i := int64(0); i < n; i++ {
			e, err := readReplyDepth(r, depth+1)
			if err != nil {
				return reply{}, err
			}
			out.Array = append(out.Array, e)
		}
		return out, nil
	}
	return reply{}, fmt.Errorf("%w: reply type %q", errProtocol, line[0])
}
