package redis

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// node is one connection to one Redis server, dialled on first use and again after an I/O
// error.
type node struct {
	addr, password  string
	db              int64 // SELECT after connecting (Standalone only; a cluster has database 0)
	connectTO, opTO time.Duration
	conn            net.Conn
	rd              *bufio.Reader
}

// connect dials and authenticates (AUTH, SELECT) a new connection.
func (n *node) connect(ctx context.Context) error {
	d := net.Dialer{Timeout: n.connectTO, KeepAlive: 30 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", n.addr)
	if err != nil {
		return fmt.Errorf("redis sink: connecting to %s: %w", n.addr, err)
	}
	n.conn, n.rd = conn, bufio.NewReaderSize(conn, 4096)
	var hello []byte
	count := 0
	if n.password != "" {
		hello = appendCommand(hello, []byte("AUTH"), []byte(n.password))
		count++
	}
	if n.db != 0 {
		hello = appendCommand(hello, []byte("SELECT"), strconv.AppendInt(nil, n.db, 10))
		count++
	}
	if count == 0 {
		return nil
	}
	replies, err := n.roundTrip(hello, count)
	if err != nil {
		return err
	}
	for _, r := range replies {
		if r.Err != "" {
			n.drop()
			return connector.Permanent(fmt.Errorf("redis sink: AUTH/SELECT on %s: %w", n.addr, r.Err))
		}
	}
	return nil
}

// ensure connects when not connected.
func (n *node) ensure(ctx context.Context) error {
	if n.conn != nil {
		return nil
	}
	return n.connect(ctx)
}

func (n *node) drop() {
	if n.conn != nil {
		_ = n.conn.Close()
		n.conn = nil
	}
}

// roundTrip sends cmds and reads count replies within operationTimeout; an I/O error drops
// the connection (the next try dials again).
func (n *node) roundTrip(cmds []byte, count int) ([]reply, error) {
	_ = n.conn.SetDeadline(time.Now().Add(n.opTO))
	if _, err := n.conn.Write(cmds); err != nil {
		n.drop()
		return nil, fmt.Errorf("redis sink: %s: %w", n.addr, err)
	}
	out := make([]reply, 0, count)
	for i := 0; i < count; i++ {
		r, err := readReply(n.rd)
		if err != nil {
			n.drop()
			return nil, fmt.Errorf("redis sink: %s: %w", n.addr, err)
		}
		out = append(out, r)
	}
	return out, nil
}
