package chaos

import (
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// faultProxy forwards TCP connections from a listener in the test process to one target and
// injects what this kernel's missing netem would: a delay per chunk (with jitter), loss-like
// stalls (a chunk held as long as a retransmission would take, with a probability), a
// blackhole (nothing forwarded, connections kept open: a silent peer) and resets.
type faultProxy struct {
	ln     net.Listener
	target string
	rng    *rand.Rand
	rngMu  sync.Mutex

	delay        atomic.Int64 // ns per chunk
	jitter       atomic.Int64 // ns, uniform in [0, jitter)
	lossPermille atomic.Int64
	blackhole    atomic.Bool

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// lossStall is how long a "lost" chunk is held: about a TCP retransmission timeout.
const lossStall = 200 * time.Millisecond

func newFaultProxy(t testing.TB, listen, target string, seed uint64) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target, rng: rand.New(rand.NewPCG(seed, 7)), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

func (p *faultProxy) set(delay, jitter time.Duration, lossPermille int, blackhole bool) {
	p.delay.Store(int64(delay))
	p.jitter.Store(int64(jitter))
	p.lossPermille.Store(int64(lossPermille))
	p.blackhole.Store(blackhole)
}

// reset closes every open connection (clients see a reset and reconnect).
func (p *faultProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *faultProxy) close() {
	_ = p.ln.Close()
	p.reset()
	p.wg.Wait()
}

func (p *faultProxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
			if err != nil {
				_ = c.Close()
				return
			}
			p.track(c, true)
			p.track(up, true)
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); p.pipe(up, c) }()
			go func() { defer wg.Done(); p.pipe(c, up) }()
			wg.Wait()
			p.track(c, false)
			p.track(up, false)
		}()
	}
}

// pipe copies src to dst chunk by chunk, applying the current faults to each chunk; order
// is kept (one goroutine per direction), as TCP would.
func (p *faultProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			for p.blackhole.Load() {
				time.Sleep(50 * time.Millisecond) // held, never forwarded while it lasts
			}
			d := time.Duration(p.delay.Load())
			if j := p.jitter.Load(); j > 0 {
				p.rngMu.Lock()
				d += time.Duration(p.rng.Int64N(j))
				p.rngMu.Unlock()
			}
			if l := p.lossPermille.Load(); l > 0 {
				p.rngMu.Lock()
				lost := p.rng.Int64N(1000) < l
				p.rngMu.Unlock()
				if lost {
					d += lossStall
				}
			}
			if d > 0 {
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}
