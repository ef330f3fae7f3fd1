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

// Definition is the redis sink.
func Definition() *connector.Definition {
	return &connector.Definition{
		Name: "redis", Description: "Writes data into Redis", SinkClass: "org.apache.pulsar.io.redis.sink.RedisSink",
		NewSink: func() connector.Sink { return &sink{} }, EffectivelyOnceSink: true,
		SinkFields: []connector.Field{
			{Name: "redisHosts", TypeName: "String", Attributes: map[string]string{"required": "true", "help": "host:port of the Redis server"}},
			{Name: "redisPassword", TypeName: "String", Attributes: map[string]string{"sensitive": "true"}},
			{Name: "redisDatabase", TypeName: "int", Attributes: map[string]string{"defaultValue": "0"}},
			{Name: "clientMode", TypeName: "String", Attributes: map[string]string{"defaultValue": "Standalone"}},
			{Name: "operationTimeout", TypeName: "long", Attributes: map[string]string{"defaultValue": "10000"}},
			{Name: "batchSize", TypeName: "int", Attributes: map[string]string{"defaultValue": "200"}},
			{Name: "batchTimeMs", TypeName: "long", Attributes: map[string]string{"defaultValue": "1000"}},
		},
	}
}

type sink struct {
	addr, password  string
	db              int64
	connectTO, opTO time.Duration
	batchSize       int64
	batchTime       time.Duration
	conn            net.Conn
	rd              *bufio.Reader
	buf             []byte
	b               *connector.Batcher
}

func (s *sink) Validate(c connector.Config) error {
	hosts := c.List("redisHosts")
	if len(hosts) == 0 {
		c.Required("redisHosts")
	} else {
		s.addr = hosts[0]
		if _, _, err := net.SplitHostPort(s.addr); err != nil {
			return fmt.Errorf("configs: redisHosts: %q is not host:port", s.addr)
		}
	}
	if c.OneOf("clientMode", "Standalone", "Standalone", "Cluster") == "Cluster" || len(hosts) > 1 {
		return fmt.Errorf("configs: clientMode: Redis Cluster is not supported yet; give one Standalone redisHosts")
	}
	s.password = c.String("redisPassword", "")
	s.db = c.IntRange("redisDatabase", 0, 0, 1<<16)
	s.connectTO = c.Millis("connectTimeout", 10*time.Second)
	s.opTO = c.Millis("operationTimeout", 10*time.Second)
	s.batchSize = c.IntRange("batchSize", 200, 1, 1<<20)
	s.batchTime = c.Millis("batchTimeMs", time.Second)
	return nil
}

func (s *sink) Open(ctx context.Context, sc connector.Context) error {
	s.b = &connector.Batcher{Size: int(s.batchSize), Interval: max(s.batchTime, time.Millisecond), Write: s.write, Logger: sc.Logger(),
		OnRetry: func(err error) { sc.Logger().Warn("redis sink: write failed; retrying", "err", err) }}
	s.b.Start(ctx)
	return nil
}

func (s *sink) Write(_ context.Context, rec *connector.Record) error {
	if rec.Key == "" {
		rec.Fail(connector.Permanentf("redis sink: the message has no key"))
		return nil
	}
	s.b.Add(rec)
	return nil
}

// connect dials and authenticates (AUTH, SELECT) a new connection.
func (s *sink) connect(ctx context.Context) error {
	d := net.Dialer{Timeout: s.connectTO, KeepAlive: 30 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("redis sink: connecting to %s: %w", s.addr, err)
	}
	s.conn, s.rd = conn, bufio.NewReaderSize(conn, 4096)
	var hello []byte
	n := 0
	if s.password != "" {
		hello = appendCommand(hello, []byte("AUTH"), []byte(s.password))
		n++
	}
	if s.db != 0 {
		hello = appendCommand(hello, []byte("SELECT"), strconv.AppendInt(nil, s.db, 10))
		n++
	}
	if n == 0 {
		return nil
	}
	replies, err := s.roundTrip(hello, n)
	if err != nil {
		return err
	}
	for _, r := range replies {
		if r.Err != "" {
			s.drop()
			return connector.Permanent(fmt.Errorf("redis sink: AUTH/SELECT: %w", r.Err))
		}
	}
	return nil
}

func (s *sink) drop() {
	if s.conn != nil {
		_ = s.conn.Close()
		s.conn = nil
	}
}

// roundTrip sends cmds and reads n replies within operationTimeout; an I/O error drops the
// connection (the next try dials again).
func (s *sink) roundTrip(cmds []byte, n int) ([]reply, error) {
	_ = s.conn.SetDeadline(time.Now().Add(s.opTO))
	if _, err := s.conn.Write(cmds); err != nil {
		s.drop()
		return nil, fmt.Errorf("redis sink: %w", err)
	}
	out := make([]reply, 0, n)
	for i := 0; i < n; i++ {
		r, err := readReply(s.rd)
		if err != nil {
			s.drop()
			return nil, fmt.Errorf("redis sink: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// write applies recs in one MULTI/EXEC: all or nothing.
func (s *sink) write(ctx context.Context, recs []*connector.Record) error {
	if s.conn == nil {
		if err := s.connect(ctx); err != nil {
			return err
		}
	}
	s.buf = appendCommand(s.buf[:0], []byte("MULTI"))
	for _, r := range recs {
		if len(r.Value) == 0 {
			s.buf = appendCommand(s.buf, []byte("DEL"), []byte(r.Key))
		} else {
			s.buf = appendCommand(s.buf, []byte("SET"), []byte(r.Key), r.Value)
		}
	}
	s.buf = appendCommand(s.buf, []byte("EXEC"))
	replies, err := s.roundTrip(s.buf, len(recs)+2)
	if err != nil {
		return err
	}
	for _, r := range replies[:len(replies)-1] {
		if r.Err != "" {
			// Queuing refused a command (EXEC then aborts the whole transaction).
			return connector.Permanent(fmt.Errorf("redis sink: %w", r.Err))
		}
	}
	exec := replies[len(replies)-1]
	switch {
	case exec.Err != "":
		return fmt.Errorf("redis sink: EXEC: %w", exec.Err)
	case exec.Nil || len(exec.Array) != len(recs):
		return fmt.Errorf("redis sink: EXEC answered %d results for %d commands", len(exec.Array), len(recs))
	}
	for _, r := range exec.Array {
		if r.Err != "" {
			return connector.Permanent(fmt.Errorf("redis sink: %w", r.Err))
		}
	}
	return nil
}

func (s *sink) Close() error {
	if s.b != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s.b.Close(ctx)
		cancel()
	}
	s.drop()
	return nil
}
