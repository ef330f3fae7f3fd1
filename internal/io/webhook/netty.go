package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// The netty source's tcp and udp types, as Pulsar's NettySource: over TCP each chunk a read
// returns becomes one message (Pulsar's pipeline has only a byte-array decoder, no
// framing, so a sender that needs message boundaries sends one message per connection or
// uses type http); over UDP each datagram is one message. Neither protocol can tell the
// sender whether its bytes were published, so delivery is at most once, as in Pulsar;
// Emit's back-pressure stops reading (TCP then pushes back on the sender) instead of
// buffering without bound.

// maxChunk bounds one TCP read and one datagram (the largest UDP payload).
const maxChunk = 64 << 10

func (s *source) runTCP(ctx context.Context, sc connector.SourceContext) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("netty source: listen on %s: %w", s.addr, err)
	}
	sc.Logger().Info("netty source: serving tcp", "addr", ln.Addr().String())
	var wg sync.WaitGroup
	conns := map[net.Conn]struct{}{}
	var mu sync.Mutex
	stop := context.AfterFunc(ctx, func() {
		_ = ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	slots := make(chan struct{}, s.maxConns) // more connections wait in the listen backlog
	defer wg.Wait()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		c, err := ln.Accept()
		if err != nil {
			<-slots
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("netty source: accept: %w", err)
		}
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			s.serveTCP(ctx, sc, c)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			_ = c.Close()
		}()
	}
}

func (s *source) serveTCP(ctx context.Context, sc connector.SourceContext, c net.Conn) {
	buf := make([]byte, maxChunk)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			rec := &connector.Record{Value: append([]byte(nil), buf[:n]...), EventTime: time.Now()}
			if sc.Emit(ctx, rec) != nil {
				return
			}
		}
		if err != nil {
			return // EOF or closed: the sender is done
		}
	}
}

func (s *source) runUDP(ctx context.Context, sc connector.SourceContext) error {
	pc, err := (&net.ListenConfig{}).ListenPacket(ctx, "udp", s.addr)
	if err != nil {
		return fmt.Errorf("netty source: listen on udp %s: %w", s.addr, err)
	}
	sc.Logger().Info("netty source: serving udp", "addr", pc.LocalAddr().String())
	stop := context.AfterFunc(ctx, func() { _ = pc.Close() })
	defer stop()
	buf := make([]byte, maxChunk)
	for {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("netty source: udp: %w", err)
		}
		rec := &connector.Record{Value: append([]byte(nil), buf[:n]...), EventTime: time.Now()}
		if sc.Emit(ctx, rec) != nil {
			return nil
		}
	}
}
