package testenv

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections from a loopback port to a target and can cut or hold
// them: a network fault between a client and a real server.
type Proxy struct {
	Addr   string
	target string
	l      net.Listener

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	cut     bool
	held    bool
	release chan struct{}
}

// StartProxy listens on a free loopback port and forwards to target until the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: proxy listen: %v", err)
	}
	p := &Proxy{Addr: l.Addr().String(), target: target, l: l, conns: map[net.Conn]struct{}{}, release: make(chan struct{})}
	go p.accept()
	t.Cleanup(func() { l.Close(); p.Restore(); p.closeAll() })
	return p
}

func (p *Proxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		p.drop(c)
		return
	}
	p.mu.Lock()
	p.conns[u] = struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(u, c) }()
	go func() { defer wg.Done(); p.pipe(c, u) }()
	wg.Wait()
	p.drop(c)
	p.drop(u)
}

// pipe copies src to dst in small pieces, waiting while the proxy holds traffic.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			held, release := p.held, p.release
			p.mu.Unlock()
			if held {
				<-release
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			return
		}
	}
}

func (p *Proxy) drop(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) closeAll() {
	p.mu.Lock()
	cs := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

// Cut closes every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
	p.closeAll()
}

// Hold stops forwarding bytes (connections stay open) until Restore.
func (p *Proxy) Hold() {
	p.mu.Lock()
	if !p.held {
		p.held = true
		p.release = make(chan struct{})
	}
	p.mu.Unlock()
}

// Restore ends Cut and Hold.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	if p.held {
		p.held = false
		close(p.release)
	}
	p.mu.Unlock()
}
