package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// splice connects a client that asked for proxy_to_broker_url to that broker: the target
// must be a known broker; the proxy performs the CONNECT handshake on the client's behalf
// (the client's own credentials travel unchanged, so the broker authenticates the client),
// relays the broker's first answer, and from then on copies bytes both ways without
// decoding them. Whichever side ends first closes both.
func (p *Proxy) splice(client net.Conn, clientBr *bufio.Reader, connect *pb.CommandConnect, se *auth.Session, logger *slog.Logger) {
	raw := connect.GetProxyToBrokerUrl()
	target, err := HostPort(raw, "pulsar")
	if len(raw) > maxEchoedTarget {
		raw = raw[:maxEchoedTarget] + "..." // client-chosen text: bounded in logs and answers
	}
	if err != nil {
		err = fmt.Errorf("%w: %q is not host:port", ErrNotABroker, raw)
	} else if !p.brokers.allowedService(target) {
		err = fmt.Errorf("%w: %q (known: registered brokers, brokerServiceURL and addresses from lookups)", ErrNotABroker, raw)
	}
	if err != nil {
		logger.Warn("refusing to proxy", "proxyToBrokerUrl", raw, "err", err)
		sendConnError(client, pb.ServerError_NotAllowedError, "proxy: refusing proxy_to_broker_url: "+err.Error())
		return
	}
	logger = logger.With("broker", target)
	deadline := time.Now().Add(p.cfg.ConnectTimeout())
	d := net.Dialer{Deadline: deadline}
	dialAddr, useTLS := p.brokers.binaryTarget(target, p.sec.withTLS)
	dctx, dcancel := context.WithDeadline(p.ctx, deadline)
	broker, err := p.sec.dial(dctx, &d, dialAddr, useTLS)
	dcancel()
	if err != nil {
		logger.Info("cannot reach broker for client", "err", err)
		sendConnError(client, pb.ServerError_ServiceNotReady, fmt.Sprintf("proxy: cannot reach broker %s: %v", target, err))
		return
	}
	defer broker.Close()
	// The broker closes with the proxy (Close closes client connections; this unblocks the
	// broker side too).
	stop := context.AfterFunc(p.ctx, func() { _ = broker.Close() })
	defer stop()

	fwd := proto.Clone(connect).(*pb.CommandConnect)
	fwd.ProxyToBrokerUrl = nil
	if se != nil {
		// The proxy authenticated the client: it speaks to the broker as itself, naming the
		// client (security.go).
		cctx, cancel := context.WithDeadline(p.ctx, deadline)
		fwd, err = p.sec.upstreamConnect(cctx, se, connect)
		cancel()
		if err != nil {
			sendConnError(client, pb.ServerError_ServiceNotReady, "proxy: "+err.Error())
			return
		}
		// The proxy cannot refresh credentials through bytes it does not decode: the
		// connection ends when they expire, and the client reconnects with fresh ones.
		if d := untilExpiry(se); d > 0 {
			t := time.AfterFunc(d, func() {
				logger.Info("closing spliced connection: the client's credentials expired", "role", se.Principal().Role)
				_ = client.Close()
				_ = broker.Close()
			})
			defer t.Stop()
		}
	}
	brokerBr := bufio.NewReaderSize(broker, clientBufferBytes)
	first, err := handshake(broker, brokerBr, fwd, deadline, p.cfg.MaxFrameSizeBytes)
	if err != nil {
		logger.Info("handshake with broker failed", "err", err)
		sendConnError(client, pb.ServerError_ServiceNotReady, fmt.Sprintf("proxy: handshake with broker %s failed: %v", target, err))
		return
	}
	_ = client.SetWriteDeadline(time.Now().Add(p.cfg.ConnectTimeout()))
	if err := writeCommand(client, first); err != nil {
		return
	}
	_ = client.SetWriteDeadline(time.Time{})
	if first.GetType() == pb.BaseCommand_ERROR {
		return // the broker refused the client (say, authentication); it has its answer
	}
	p.metrics.spliced.Inc()
	logger.Debug("spliced client to broker")

	in, out := p.pipe(client, clientBr, broker, brokerBr)
	p.metrics.bytesIn.Add(float64(in))
	p.metrics.bytesOut.Add(float64(out))
	logger.Debug("spliced connection ended", "bytesIn", in, "bytesOut", out)
}

// maxEchoedTarget bounds how much of a refused proxy_to_broker_url is logged and echoed.
const maxEchoedTarget = 256

// pipe copies client->broker and broker->client until either direction ends, then closes
// both connections so the other copy ends too. Bytes already buffered by the handshake
// readers go first; after that the copies run on the bare connections, which lets the
// kernel splice TCP to TCP where it can, and otherwise uses one bounded buffer per
// direction.
func (p *Proxy) pipe(client net.Conn, clientBr *bufio.Reader, broker net.Conn, brokerBr *bufio.Reader) (in, out int64) {
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			_ = client.Close()
			_ = broker.Close()
		})
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer closeBoth()
		in = p.copyDir(broker, clientBr, client)
	}()
	out = p.copyDir(client, brokerBr, broker)
	closeBoth()
	wg.Wait()
	return in, out
}

// copyDir drains what br already buffered, then copies src to dst. Between two TCP
// connections the copy is the kernel's splice(2) through a pipe of bounded size (no user
// buffer); otherwise one buffer of SpliceBufferBytes.
func (p *Proxy) copyDir(dst io.Writer, br *bufio.Reader, src net.Conn) int64 {
	var n int64
	if k := br.Buffered(); k > 0 {
		b, _ := br.Peek(k)
		w, err := dst.Write(b)
		n += int64(w)
		if err != nil {
			return n
		}
	}
	var w int64
	var err error
	_, dstTCP := dst.(*net.TCPConn)
	_, srcTCP := src.(*net.TCPConn)
	if dstTCP && srcTCP {
		w, err = io.Copy(dst, src)
	} else {
		w, err = io.CopyBuffer(dst, onlyReader{src}, make([]byte, p.cfg.SpliceBufferBytes))
	}
	n += w
	if err != nil && !errors.Is(err, net.ErrClosed) {
		p.logger.Debug("splice copy ended", "err", err)
	}
	return n
}

// onlyReader hides every method but Read, so io.CopyBuffer uses the bounded buffer
// instead of dst.ReadFrom (whose generic fallback allocates its own buffers).
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(b []byte) (int, error) { return o.r.Read(b) }
