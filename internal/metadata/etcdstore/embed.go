package etcdstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/magnetar-io/magnetar/internal/config"
)

// Errors of the embedded member.
var (
	ErrEmbedConfig   = errors.New("etcdstore: bad embedded member config")
	ErrEmbedNotReady = errors.New("etcdstore: embedded member not ready")
)

// Embedded is an etcd member running inside this process.
type Embedded struct {
	etcd   *embed.Etcd
	logger *slog.Logger
	name   string
	tls    bool         // client URLs are https://
	quiet  *atomic.Bool // set while closing: etcd logs each closed listener as an error

	closeOnce sync.Once
}

// EmbedConfig translates our MetadataConfig into etcd's. It validates cfg first.
func EmbedConfig(cfg config.MetadataConfig, logger *slog.Logger) (*embed.Config, error) {
	return embedConfig(cfg, logger, nil)
}

func embedConfig(cfg config.MetadataConfig, logger *slog.Logger, quiet *atomic.Bool) (*embed.Config, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEmbedConfig, err)
	}
	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.DataDir
	var err error
	if ec.ListenClientUrls, err = parseURLs(cfg.ListenClientURLs); err != nil {
		return nil, err
	}
	if ec.ListenPeerUrls, err = parseURLs(cfg.ListenPeerURLs); err != nil {
		return nil, err
	}
	if ec.AdvertiseClientUrls, err = parseURLs(cfg.EffectiveAdvertiseClientURLs()); err != nil {
		return nil, err
	}
	if ec.AdvertisePeerUrls, err = parseURLs(cfg.EffectiveAdvertisePeerURLs()); err != nil {
		return nil, err
	}
	ec.InitialCluster = cfg.EffectiveInitialCluster()
	ec.ClusterState = cfg.InitialClusterState
	ec.InitialClusterToken = cfg.InitialClusterToken
	ec.TickMs = uint(cfg.HeartbeatInterval / time.Millisecond)
	ec.ElectionMs = uint(cfg.ElectionTimeout / time.Millisecond)
	ec.SnapshotCount = cfg.SnapshotCount
	ec.AutoCompactionMode = cfg.AutoCompactionMode
	ec.AutoCompactionRetention = cfg.AutoCompactionRetention
	ec.QuotaBackendBytes = cfg.QuotaBackendBytes
	ec.MaxRequestBytes = uint(cfg.MaxRequestBytes)
	// A fresh single member campaigns at once instead of waiting an election timeout, and
	// pre-vote keeps a partitioned member from disrupting the leader when it returns.
	ec.InitialElectionTickAdvance = true
	ec.PreVote = true
	// The member serves etcd clients only: no HTTP gateway, no extra metrics listener.
	ec.EnableGRPCGateway = false
	if err := applyTLS(ec, cfg.TLS); err != nil {
		return nil, err
	}
	ec.Logger = "zap"
	ec.LogLevel = "warn"
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zapToSlogQuiet(logger, quiet))
	return ec, nil
}

func parseURLs(raw []string) ([]url.URL, error) {
	out := make([]url.URL, 0, len(raw))
	for _, r := range raw {
		u, err := url.Parse(r)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrEmbedConfig, r, err)
		}
		out = append(out, *u)
	}
	return out, nil
}

// StartEmbedded starts an etcd member and waits until it is ready to serve (it has joined a
// quorum with a leader), at most cfg.StartTimeout or until ctx is done. A single fresh member
// is ready in a fraction of a second.
func StartEmbedded(ctx context.Context, cfg config.MetadataConfig, logger *slog.Logger) (*Embedded, error) {
	logger = logger.With("component", "etcd", "member", cfg.Name)
	quiet := new(atomic.Bool)
	ec, err := embedConfig(cfg, logger, quiet)
	if err != nil {
		return nil, err
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: start member %s in %s: %w", cfg.Name, cfg.DataDir, err)
	}
	// etcd's Close waits for its client servers, which wait for the member to be ready: a
	// member that never became ready must be stopped hard first, or Close hangs.
	abort := func() {
		quiet.Store(true)
		e.Server.HardStop()
		e.Close()
	}
	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		abort()
		return nil, fmt.Errorf("etcdstore: member %s failed while starting: %w", cfg.Name, err)
	case <-e.Server.StopNotify():
		abort()
		return nil, fmt.Errorf("etcdstore: member %s stopped while starting (see the log above)", cfg.Name)
	case <-timer.C:
		abort()
		return nil, fmt.Errorf("%w: member %s did not join a quorum within %v (metadataStartTimeout); are the other members of %s running?",
			ErrEmbedNotReady, cfg.Name, cfg.StartTimeout, cfg.EffectiveInitialCluster())
	case <-ctx.Done():
		abort()
		return nil, fmt.Errorf("%w: %w", ErrEmbedNotReady, ctx.Err())
	}
	m := &Embedded{etcd: e, logger: logger, name: cfg.Name, quiet: quiet, tls: cfg.TLS.CertFile != ""}
	logger.Info("metadata member ready", "clientURLs", m.ClientURLs(), "dataDir", cfg.DataDir)
	return m, nil
}

// ClientURLs are the URLs the member actually listens on for clients (a port 0 in the
// config is replaced by the port the system chose).
func (m *Embedded) ClientURLs() []string {
	var out []string
	scheme := "http://"
	if m.tls {
		scheme = "https://"
	}
	for _, l := range m.etcd.Clients {
		out = append(out, scheme+l.Addr().String())
	}
	return out
}

// Open returns a Store connected to this member through its client URLs.
func (m *Embedded) Open(ctx context.Context, logger *slog.Logger) (*Store, error) {
	return m.OpenTLS(ctx, nil, logger)
}

// OpenTLS is Open with a client TLS config, for a member serving https:// client URLs.
func (m *Embedded) OpenTLS(ctx context.Context, tc *tls.Config, logger *slog.Logger) (*Store, error) {
	o := DefaultOptions(m.ClientURLs()...)
	o.TLS = tc
	return Open(ctx, o, logger)
}

// Err reports a fatal error of the running member (for example its disk failed).
func (m *Embedded) Err() <-chan error { return m.etcd.Err() }

// Stopped is closed when the member has stopped, for whatever reason.
func (m *Embedded) Stopped() <-chan struct{} { return m.etcd.Server.StopNotify() }

// IsLeader reports whether this member currently leads the raft group.
func (m *Embedded) IsLeader() bool { return m.etcd.Server.Leader() == m.etcd.Server.MemberID() }

// HasLeader reports whether this member currently knows a leader.
func (m *Embedded) HasLeader() bool { return m.etcd.Server.Leader() != 0 }

// Close stops the member gracefully. It may be called more than once (etcd's own Close
// may not).
func (m *Embedded) Close() {
	m.closeOnce.Do(func() {
		m.quiet.Store(true)
		m.etcd.Close()
	})
}

// applyTLS sets the member's client and peer TLS: https:// URLs need a certificate, and
// with client-cert-auth every client (or peer) must present one from the trusted CA.
func applyTLS(ec *embed.Config, t config.MetadataServerTLSConfig) error {
	https := func(us []url.URL) bool {
		for _, u := range us {
			if u.Scheme == "https" {
				return true
			}
		}
		return false
	}
	if https(ec.ListenClientUrls) != (t.CertFile != "") {
		return fmt.Errorf("%w: https:// client URLs and metadataCertFile go together (listen %v)", ErrEmbedConfig, ec.ListenClientUrls)
	}
	if https(ec.ListenPeerUrls) != (t.PeerCertFile != "") {
		return fmt.Errorf("%w: https:// peer URLs and metadataPeerCertFile go together (listen %v)", ErrEmbedConfig, ec.ListenPeerUrls)
	}
	ec.ClientTLSInfo.CertFile, ec.ClientTLSInfo.KeyFile = t.CertFile, t.KeyFile
	ec.ClientTLSInfo.TrustedCAFile, ec.ClientTLSInfo.ClientCertAuth = t.TrustedCAFile, t.ClientCertAuth
	ec.PeerTLSInfo.CertFile, ec.PeerTLSInfo.KeyFile = t.PeerCertFile, t.PeerKeyFile
	ec.PeerTLSInfo.TrustedCAFile, ec.PeerTLSInfo.ClientCertAuth = t.PeerTrustedCAFile, t.PeerClientCertAuth
	ec.ClientAutoTLS, ec.PeerAutoTLS = false, false
	return nil
}
