package devcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata/connect"
)

// ErrStart: a process of the cluster did not come up.
var ErrStart = errors.New("devcluster: start failed")

// Options size and place the cluster.
type Options struct {
	// Binary is the magnetar executable to run (the dev-cluster command passes itself).
	Binary string
	// Dir holds every process's data directory and log file.
	Dir string
	// Counts of each role (defaults 3, 3, 2).
	Metadata, Bookies, Brokers int
	// BrokerArgs and BookieArgs are extra flags for every broker / bookie.
	BrokerArgs, BookieArgs []string
	// BrokerAddrs places broker i at BrokerAddrs[i] ("host:port") instead of a free loopback
	// port: it binds the host's address and advertises the host name, as a cluster of named
	// machines does (the Go client's clustered suite dials broker-1:6650). Its HTTP port is
	// a free one on the same address.
	BrokerAddrs []string
	// StartTimeout bounds the wait for each process to serve (default 60 s).
	StartTimeout time.Duration
	Logger       *slog.Logger
	// NoProxy leaves out the `magnetar proxy` otherwise started in front of the brokers.
	NoProxy bool
	// TLS runs every role on TLS with authentication and authorization, with a throwaway
	// CA and credentials under Dir/tls (tls.go).
	TLS bool
	// Node, when set, places each process (by name, e.g. "bookie-2") on a host of its own:
	// it runs under prefix (e.g. ip netns exec <ns>) and listens on host at the role's fixed
	// port (NodePorts) instead of a free loopback port. The chaos harness uses it to put
	// every process in its own network namespace.
	Node func(name string) (prefix []string, host string)
}

// NodePorts are the ports processes use with Options.Node (each host has its own ports, so
// they are fixed; none is a default port of the roles).
var NodePorts = struct{ MetadataClient, MetadataPeer, Bookie, Broker, BrokerHTTP int }{12379, 12380, 13181, 16650, 18080}

// Proc is one child process.
type Proc struct {
	Name string
	Args []string
	// Addr is the main address (etcd client, bookie, broker binary protocol); HTTP the
	// broker's HTTP address.
	Addr, HTTP string

	bin, log string
	// tls, when set, is how the dev-cluster itself reaches the process (Addr and HTTP are
	// then TLS listeners).
	tls  *tls.Config
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Cluster is a running local cluster.
type Cluster struct {
	opts        Options
	log         *slog.Logger
	MetadataURL string // etcd://a,b,c
	Metadata    []*Proc
	Bookies     []*Proc
	Brokers     []*Proc
	// Proxy is the `magnetar proxy` in front of the brokers (nil with Options.NoProxy).
	Proxy *Proc
	// TLS is the cluster's CA and credentials with Options.TLS (nil otherwise).
	TLS *clusterTLS
}

// freePorts reserves n loopback ports by listening on port 0 and releasing them; another
// process may take one in between, which a local development cluster accepts.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	out := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// Start launches the metadata members, then the bookies, then the brokers, each waiting
// for the previous tier to serve.
func Start(ctx context.Context, o Options) (_ *Cluster, err error) {
	if o.Metadata == 0 {
		o.Metadata = 3
	}
	if o.Bookies == 0 {
		o.Bookies = 3
	}
	if o.Brokers == 0 {
		o.Brokers = 2
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	c := &Cluster{opts: o, log: o.Logger.With("component", "devcluster")}
	defer func() {
		if err != nil {
			c.Stop(10 * time.Second)
		}
	}()
	ports, err := freePorts(2*o.Metadata + o.Bookies + 4*o.Brokers + 4)
	if err != nil {
		return nil, fmt.Errorf("%w: ports: %w", ErrStart, err)
	}
	loopback := func() string { p := ports[0]; ports = ports[1:]; return "127.0.0.1:" + strconv.Itoa(p) }
	// addr is the address of name's port of one kind: a free loopback port, or the node's
	// host with the fixed port.
	addr := func(name string, fixed int) string {
		if o.Node == nil {
			return loopback()
		}
		_, host := o.Node(name)
		return net.JoinHostPort(host, strconv.Itoa(fixed))
	}

	scheme, metaArgs, bookieArgs := "http://", []string(nil), o.BookieArgs
	if o.TLS {
		hosts := []string{"127.0.0.1", "::1", "localhost"}
		for _, a := range o.BrokerAddrs {
			if h, _, err := net.SplitHostPort(a); err == nil {
				hosts = append(hosts, h)
			}
		}
		if o.Node != nil {
			for _, n := range nodeNames(o) {
				_, h := o.Node(n)
				hosts = append(hosts, h)
			}
		}
		if c.TLS, err = newClusterTLS(o.Dir, hosts); err != nil {
			return nil, fmt.Errorf("%w: TLS: %w", ErrStart, err)
		}
		scheme, metaArgs = "https://", c.TLS.metadataArgs()
		bookieArgs = append(c.TLS.bookieArgs(), bookieArgs...)
	}
	var initial, clients []string
	type member struct{ name, client, peer string }
	var members []member
	for i := range o.Metadata {
		name := fmt.Sprintf("metadata-%d", i+1)
		m := member{name: name, client: addr(name, NodePorts.MetadataClient), peer: addr(name, NodePorts.MetadataPeer)}
		members = append(members, m)
		initial = append(initial, m.name+"="+scheme+m.peer)
		clients = append(clients, m.client)
	}
	c.MetadataURL = "etcd://" + strings.Join(clients, ",")
	for _, m := range members {
		p := c.proc(m.name, m.client, "", append([]string{"metadata", "--name", m.name, "--data-dir", filepath.Join(o.Dir, m.name),
			"--listen-client", scheme + m.client, "--listen-peer", scheme + m.peer,
			"--initial-cluster", strings.Join(initial, ",")}, metaArgs...)...)
		c.Metadata = append(c.Metadata, p)
		if err := p.Start(); err != nil {
			return nil, err
		}
	}
	if err := c.waitMetadata(ctx); err != nil {
		return nil, err
	}
	for i := range o.Bookies {
		name := fmt.Sprintf("bookie-%d", i+1)
		addr := addr(name, NodePorts.Bookie)
		args := append([]string{"bookie", "--metadata-url", c.MetadataURL, "--listen", addr,
			"--journal-directories", filepath.Join(o.Dir, name, "journal"),
			"--ledger-directories", filepath.Join(o.Dir, name, "ledgers")}, bookieArgs...)
		p := c.proc(name, addr, "", args...)
		c.Bookies = append(c.Bookies, p)
		if err := p.Start(); err != nil {
			return nil, err
		}
	}
	for _, p := range c.Bookies {
		if err := p.WaitServing(ctx, o.StartTimeout); err != nil {
			return nil, fmt.Errorf("%w: %s: %w (log: %s)", ErrStart, p.Name, err, p.log)
		}
	}
	for i := range o.Brokers {
		name := fmt.Sprintf("broker-%d", i+1)
		addr, httpAddr := addr(name, NodePorts.Broker), addr(name, NodePorts.BrokerHTTP)
		bind, _, _ := net.SplitHostPort(addr)
		advertised := bind
		if i < len(o.BrokerAddrs) {
			if bind, advertised, addr, httpAddr, err = placeBroker(o.BrokerAddrs[i]); err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrStart, name, err)
			}
		}
		_, port, _ := net.SplitHostPort(addr)
		_, httpPort, _ := net.SplitHostPort(httpAddr)
		args := []string{"broker", "--metadata-url", c.MetadataURL, "--bind-address", bind,
			"--advertised-address", advertised, "--port", port, "--http-port", httpPort,
			"--managed-ledger-default-ensemble-size", "2", "--managed-ledger-default-write-quorum", "2",
			"--managed-ledger-default-ack-quorum", "2",
			// Used only with --functions-worker: the in-broker worker's packages and logs.
			"--functions-worker-data-dir", filepath.Join(o.Dir, name)}
		if o.TLS {
			// TLS only: the TLS listeners take the addresses the plaintext ones would have.
			args = append(args, c.TLS.brokerArgs(port, httpPort)...)
		}
		args = append(args, o.BrokerArgs...)
		p := c.proc(name, addr, httpAddr, args...)
		c.Brokers = append(c.Brokers, p)
		if err := p.Start(); err != nil {
			return nil, err
		}
	}
	for _, p := range c.Brokers {
		if err := p.WaitServing(ctx, o.StartTimeout); err != nil {
			return nil, err
		}
	}
	if o.NoProxy {
		return c, nil
	}
	paddr, httpAddr := addr("proxy", NodePorts.Broker), addr("proxy", NodePorts.BrokerHTTP)
	host, port, _ := net.SplitHostPort(paddr)
	_, httpPort, _ := net.SplitHostPort(httpAddr)
	pargs := []string{"proxy", "--metadata-url", c.MetadataURL, "--bind-address", host, "--port", port, "--http-port", httpPort}
	if o.TLS {
		pargs = append(pargs, c.TLS.proxyArgs(port, httpPort)...)
	}
	c.Proxy = c.proc("proxy", paddr, httpAddr, pargs...)
	if err := c.Proxy.Start(); err != nil {
		return nil, err
	}
	if err := c.Proxy.WaitServing(ctx, o.StartTimeout); err != nil {
		return nil, err
	}
	if c.TLS != nil {
		if err := c.TLS.writeClientConf("https://"+c.Proxy.HTTP, c.ClientServiceURL()); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// nodeNames are the names of every process of the cluster o describes.
func nodeNames(o Options) []string {
	var out []string
	for _, n := range []struct {
		kind  string
		count int
	}{{"metadata", o.Metadata}, {"bookie", o.Bookies}, {"broker", o.Brokers}} {
		for i := range n.count {
			out = append(out, fmt.Sprintf("%s-%d", n.kind, i+1))
		}
	}
	return append(out, "proxy")
}

// placeBroker resolves a "host:port" broker address to the IP it binds, the name it
// advertises, its binary address and a free HTTP address on the same IP.
func placeBroker(hostPort string) (bind, advertised, addr, httpAddr string, err error) {
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", "", "", "", err
	}
	ips, err := net.LookupHost(host)
	if err != nil || len(ips) == 0 {
		return "", "", "", "", fmt.Errorf("broker address %s: %w", hostPort, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ips[0], "0"))
	if err != nil {
		return "", "", "", "", err
	}
	httpAddr = ln.Addr().String()
	_ = ln.Close()
	return ips[0], host, net.JoinHostPort(ips[0], port), httpAddr, nil
}

func (c *Cluster) proc(name, addr, httpAddr string, args ...string) *Proc {
	p := &Proc{Name: name, Args: args, Addr: addr, HTTP: httpAddr, bin: c.opts.Binary,
		log: filepath.Join(c.opts.Dir, name+".log")}
	if c.TLS != nil {
		p.tls = c.TLS.client
	}
	if c.opts.Node != nil {
		prefix, _ := c.opts.Node(name)
		if len(prefix) > 0 {
			// ip netns exec (and the like) exec the command in place: the process we
			// signal is magnetar itself.
			p.bin, p.Args = prefix[0], append(append(append([]string{}, prefix[1:]...), c.opts.Binary), args...)
		}
	}
	return p
}

// waitMetadata waits until the members form a quorum that answers a linearizable read.
func (c *Cluster) waitMetadata(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	for {
		octx, ocancel := context.WithTimeout(ctx, 2*time.Second)
		var tc *tls.Config
		if c.TLS != nil {
			tc = c.TLS.client
		}
		st, err := connect.OpenTLS(octx, c.MetadataURL, tc, c.log)
		ocancel()
		if err == nil {
			return st.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: metadata quorum: %w (logs: %s/metadata-*.log)", ErrStart, err, c.opts.Dir)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// BrokerServiceURL is the pulsar:// (pulsar+ssl:// with TLS) URL naming every broker
// (clients round-robin lookups).
func (c *Cluster) BrokerServiceURL() string {
	var hs []string
	for _, p := range c.Brokers {
		hs = append(hs, p.Addr)
	}
	return c.binaryScheme() + strings.Join(hs, ",")
}

func (c *Cluster) binaryScheme() string {
	if c.TLS != nil {
		return "pulsar+ssl://"
	}
	return "pulsar://"
}

// ClientServiceURL is the URL clients should use: the proxy's, or every broker's without one.
func (c *Cluster) ClientServiceURL() string {
	if c.Proxy != nil {
		return c.binaryScheme() + c.Proxy.Addr
	}
	return c.BrokerServiceURL()
}

// metadataGrace bounds the wait for an etcd member to stop: once the others are gone it has
// no quorum and may wait long for a leader transfer; its WAL is fsynced, so SIGKILL is safe.
const metadataGrace = 5 * time.Second

// Stop sends SIGTERM to every process, brokers first and metadata last, each tier waiting up
// to grace before SIGKILL.
func (c *Cluster) Stop(grace time.Duration) {
	tiers := [][]*Proc{{c.Proxy}, c.Brokers, c.Bookies, c.Metadata}
	for i, tier := range tiers {
		if i == len(tiers)-1 {
			grace = min(grace, metadataGrace)
		}
		var wg sync.WaitGroup
		for _, p := range tier {
			if p == nil {
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); p.Stop(grace) }()
		}
		wg.Wait()
	}
}

// Start runs the process with its output appended to its log file.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStart, p.Name, err)
	}
	cmd := exec.Command(p.bin, p.Args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group: a terminal's Ctrl-C reaches the dev-cluster only, which then
	// stops the children in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("%w: %s: %w", ErrStart, p.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = f.Close(); close(done) }()
	p.cmd, p.done = cmd, done
	return nil
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("devcluster: %s not started", p.Name)
	}
	return cmd.Process.Signal(sig)
}

// Kill sends SIGKILL and waits for the process to exit.
func (p *Proc) Kill() {
	_ = p.Signal(syscall.SIGKILL)
	p.Wait(30 * time.Second)
}

// Wait waits up to d for the process to exit; false if it still runs.
func (p *Proc) Wait(d time.Duration) bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// Running reports whether the process was started and has not exited.
func (p *Proc) Running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM (SIGCONT first, in case it is paused) and SIGKILL after grace.
func (p *Proc) Stop(grace time.Duration) {
	_ = p.Signal(syscall.SIGCONT)
	_ = p.Signal(syscall.SIGTERM)
	if !p.Wait(grace) {
		p.Kill()
	}
}

// Log is the path of the process's log file.
func (p *Proc) Log() string { return p.log }

// WaitServing waits until a broker's /status.html answers 200 (for other roles: until its
// address accepts TCP connections).
func (p *Proc) WaitServing(ctx context.Context, d time.Duration) error {
	if p.HTTP == "" {
		return waitTCP(ctx, p.Addr, d)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	hc, url := http.DefaultClient, "http://"+p.HTTP+"/status.html"
	if p.tls != nil {
		hc, url = &http.Client{Transport: &http.Transport{TLSClientConfig: p.tls}}, "https://"+p.HTTP+"/status.html"
	}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s did not serve: %v (log: %s)", ErrStart, p.Name, err, p.log)
		case <-p.done:
			return fmt.Errorf("%w: %s exited (log: %s)", ErrStart, p.Name, p.log)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func waitTCP(ctx context.Context, addr string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		var dl net.Dialer
		c, err := dl.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
