package redis

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// Definition is the redis sink.
func Definition() *connector.Definition {
	return &connector.Definition{
		Name: "redis", Description: "Writes data into Redis", SinkClass: "org.apache.pulsar.io.redis.sink.RedisSink",
		NewSink: func() connector.Sink { return &sink{} }, EffectivelyOnceSink: true,
		SinkFields: []connector.Field{
			{Name: "redisHosts", TypeName: "String", Attributes: map[string]string{"required": "true", "help": "host:port of the Redis server (Cluster: host:port,... of any of its nodes)"}},
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
	standalone node     // clientMode Standalone
	cluster    *cluster // clientMode Cluster (cluster.go)
	batchSize  int64
	batchTime  time.Duration
	buf        []byte
	b          *connector.Batcher
}

func (s *sink) Validate(c connector.Config) error {
	hosts := c.List("redisHosts")
	if len(hosts) == 0 {
		c.Required("redisHosts")
	}
	for _, h := range hosts {
		if _, _, err := net.SplitHostPort(h); err != nil {
			return fmt.Errorf("configs: redisHosts: %q is not host:port", h)
		}
	}
	mode := c.OneOf("clientMode", "Standalone", "Standalone", "Cluster")
	n := node{password: c.String("redisPassword", ""), db: c.IntRange("redisDatabase", 0, 0, 1<<16),
		connectTO: c.Millis("connectTimeout", 10*time.Second), opTO: c.Millis("operationTimeout", 10*time.Second)}
	switch {
	case mode == "Cluster" && n.db != 0:
		return fmt.Errorf("configs: redisDatabase: %d, but a Redis Cluster has only database 0", n.db)
	case mode == "Cluster":
		s.cluster = &cluster{seeds: hosts, template: n, nodes: map[string]*node{}}
	case len(hosts) > 1:
		return fmt.Errorf("configs: redisHosts: %d hosts, but clientMode Standalone writes to one; set clientMode Cluster for a Redis Cluster", len(hosts))
	case len(hosts) == 1:
		n.addr = hosts[0]
		s.standalone = n
	}
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

// write applies recs in one MULTI/EXEC: all or nothing.
// In cluster mode, one pipeline per node instead (cluster.go).
func (s *sink) write(ctx context.Context, recs []*connector.Record) error {
	if s.cluster != nil {
		return s.cluster.write(ctx, recs)
	}
	if err := s.standalone.ensure(ctx); err != nil {
		return err
	}
	s.buf = appendCommand(s.buf[:0], []byte("MULTI"))
	for _, r := range recs {
		s.buf = appendRecord(s.buf, r)
	}
	s.buf = appendCommand(s.buf, []byte("EXEC"))
	replies, err := s.standalone.roundTrip(s.buf, len(recs)+2)
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
	s.standalone.drop()
	if s.cluster != nil {
		s.cluster.close()
	}
	return nil
}

// appendRecord appends r's command: SET key value, or DEL key for a tombstone.
func appendRecord(buf []byte, r *connector.Record) []byte {
	if len(r.Value) == 0 {
		return appendCommand(buf, []byte("DEL"), []byte(r.Key))
	}
	return appendCommand(buf, []byte("SET"), []byte(r.Key), r.Value)
}
