package config

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MetadataConfig is what `magnetar metadata` runs: one etcd member, alone or part of a static
// cluster. The names follow etcd's flags (--name, --data-dir, --initial-cluster, ...) without
// the "-urls" suffixes; keys carry a "metadata" prefix so they can sit next to other roles'
// keys in one config file (standalone embeds the same member).
type MetadataConfig struct {
	// ShutdownTimeoutMs bounds `magnetar metadata`'s shutdown after SIGTERM (a member that
	// lost its quorum may wait long for a leader transfer); its WAL is fsynced, so exiting
	// then loses nothing.
	ShutdownTimeoutMs int64  `key:"metadataShutdownTimeoutMs" help:"longest clean shutdown after SIGTERM, in milliseconds; the process exits by then"`
	Name              string `key:"metadataName" flag:"name" help:"member name, unique in the cluster and used in --initial-cluster"`
	DataDir           string `key:"metadataDataDir" flag:"data-dir" help:"directory for the member's WAL, snapshots and database"`

	ListenClientURLs    []string `key:"metadataListenClient" flag:"listen-client" help:"URLs to serve clients on (comma separated, http://host:port; port 0 picks a free port)"`
	ListenPeerURLs      []string `key:"metadataListenPeer" flag:"listen-peer" help:"URLs to talk to the other members on (comma separated)"`
	AdvertiseClientURLs []string `key:"metadataAdvertiseClient" flag:"advertise-client" help:"client URLs told to others; default: --listen-client"`
	AdvertisePeerURLs   []string `key:"metadataAdvertisePeer" flag:"advertise-peer" help:"peer URLs told to others; default: --listen-peer"`

	InitialCluster      string `key:"metadataInitialCluster" flag:"initial-cluster" help:"name=peerURL,... of every member at bootstrap; default: this member alone"`
	InitialClusterState string `key:"metadataInitialClusterState" flag:"initial-cluster-state" help:"new (bootstrap a cluster) or existing (join one)"`
	InitialClusterToken string `key:"metadataInitialClusterToken" flag:"initial-cluster-token" help:"token that keeps members of different clusters apart at bootstrap"`

	HeartbeatInterval time.Duration `key:"metadataHeartbeatInterval" flag:"heartbeat-interval" help:"raft heartbeat interval"`
	ElectionTimeout   time.Duration `key:"metadataElectionTimeout" flag:"election-timeout" help:"raft election timeout, at least 5 heartbeats"`
	StartTimeout      time.Duration `key:"metadataStartTimeout" flag:"start-timeout" help:"how long to wait for the member to join a quorum and become ready"`

	SnapshotCount           uint64 `key:"metadataSnapshotCount" flag:"snapshot-count" help:"committed raft entries between snapshots"`
	AutoCompactionMode      string `key:"metadataAutoCompactionMode" flag:"auto-compaction-mode" help:"periodic (retention is a duration) or revision (retention is a revision count)"`
	AutoCompactionRetention string `key:"metadataAutoCompactionRetention" flag:"auto-compaction-retention" help:"history kept for watches: a duration (periodic) or a count (revision); 0 disables"`
	QuotaBackendBytes       int64  `key:"metadataQuotaBackendBytes" flag:"quota-backend-bytes" help:"database size at which the member raises a space alarm and refuses writes"`
	MaxRequestBytes         int64  `key:"metadataMaxRequestBytes" flag:"max-request-bytes" help:"largest client request the member accepts"`

	// TLS serves https:// client and peer URLs and demands client certificates (security.go).
	TLS MetadataServerTLSConfig
}

// DefaultMetadataConfig returns the defaults: a single member on the loopback interface, with
// etcd's own raft timing and limits.
func DefaultMetadataConfig() MetadataConfig {
	return MetadataConfig{
		ShutdownTimeoutMs:       30_000,
		Name:                    "magnetar",
		DataDir:                 "./data/metadata",
		ListenClientURLs:        []string{"http://127.0.0.1:2379"},
		ListenPeerURLs:          []string{"http://127.0.0.1:2380"},
		InitialClusterState:     "new",
		InitialClusterToken:     "magnetar",
		HeartbeatInterval:       100 * time.Millisecond,
		ElectionTimeout:         time.Second,
		StartTimeout:            time.Minute,
		SnapshotCount:           10000,
		AutoCompactionMode:      "periodic",
		AutoCompactionRetention: "1h",
		QuotaBackendBytes:       2 << 30,
		MaxRequestBytes:         3 << 19, // 1.5 MiB, etcd's default
	}
}

// Limits for the Validate bounds.
const (
	maxElectionTimeout     = 50 * time.Second // etcd's own ceiling
	maxQuotaBackendBytes   = 8 << 30          // etcd's suggested maximum database size
	minMaxRequestBytes     = 1 << 10
	maxMaxRequestBytes     = 64 << 20
	maxInitialClusterCount = 99
)

// EffectiveAdvertiseClientURLs is AdvertiseClientURLs, or the listen URLs when unset.
func (c *MetadataConfig) EffectiveAdvertiseClientURLs() []string {
	if len(c.AdvertiseClientURLs) > 0 {
		return c.AdvertiseClientURLs
	}
	return c.ListenClientURLs
}

// EffectiveAdvertisePeerURLs is AdvertisePeerURLs, or the listen URLs when unset.
func (c *MetadataConfig) EffectiveAdvertisePeerURLs() []string {
	if len(c.AdvertisePeerURLs) > 0 {
		return c.AdvertisePeerURLs
	}
	return c.ListenPeerURLs
}

// EffectiveInitialCluster is InitialCluster, or this member alone when unset.
func (c *MetadataConfig) EffectiveInitialCluster() string {
	if c.InitialCluster != "" {
		return c.InitialCluster
	}
	var parts []string
	for _, u := range c.EffectiveAdvertisePeerURLs() {
		parts = append(parts, c.Name+"="+u)
	}
	return strings.Join(parts, ",")
}

// Validate checks the metadata member settings; every bad field is reported.
func (c *MetadataConfig) Validate() error {
	errs := []error{
		Between("metadataShutdownTimeoutMs", c.ShutdownTimeoutMs, 100, 3_600_000),
		NotEmpty("metadataName", c.Name),
		NotEmpty("metadataDataDir", c.DataDir),
		checkURLs("metadataListenClient", c.ListenClientURLs, true, true),
		checkURLs("metadataListenPeer", c.ListenPeerURLs, true, true),
		checkURLs("metadataAdvertiseClient", c.AdvertiseClientURLs, false, false),
		checkURLs("metadataAdvertisePeer", c.AdvertisePeerURLs, false, false),
		OneOf("metadataInitialClusterState", c.InitialClusterState, "new", "existing"),
		NotEmpty("metadataInitialClusterToken", c.InitialClusterToken),
		Between("metadataHeartbeatInterval", c.HeartbeatInterval, time.Millisecond, maxElectionTimeout/5),
		Between("metadataElectionTimeout", c.ElectionTimeout, 5*c.HeartbeatInterval, maxElectionTimeout),
		AtLeast("metadataStartTimeout", c.StartTimeout, time.Second),
		AtLeast("metadataSnapshotCount", c.SnapshotCount, 1),
		OneOf("metadataAutoCompactionMode", c.AutoCompactionMode, "periodic", "revision"),
		Between("metadataQuotaBackendBytes", c.QuotaBackendBytes, 0, maxQuotaBackendBytes),
		Between("metadataMaxRequestBytes", c.MaxRequestBytes, minMaxRequestBytes, maxMaxRequestBytes),
		c.TLS.Validate(),
	}
	if c.AutoCompactionMode == "periodic" {
		if d, err := time.ParseDuration(c.AutoCompactionRetention); c.AutoCompactionRetention != "0" && (err != nil || d < 0) {
			errs = append(errs, &FieldError{Key: "metadataAutoCompactionRetention", Value: c.AutoCompactionRetention, Reason: "must be a duration like 1h, or 0 to disable, in periodic mode"})
		}
	} else if n, err := strconv.ParseInt(c.AutoCompactionRetention, 10, 64); err != nil || n < 0 {
		errs = append(errs, &FieldError{Key: "metadataAutoCompactionRetention", Value: c.AutoCompactionRetention, Reason: "must be a revision count (0 disables) in revision mode"})
	}
	for _, u := range c.EffectiveAdvertiseClientURLs() {
		if isUnspecifiedHost(u) && len(c.AdvertiseClientURLs) == 0 {
			errs = append(errs, &FieldError{Key: "metadataAdvertiseClient", Value: `""`, Reason: "must be set when --listen-client binds all interfaces (" + u + ")"})
		}
	}
	members, err := ParseInitialCluster(c.EffectiveInitialCluster())
	if err != nil {
		errs = append(errs, &FieldError{Key: "metadataInitialCluster", Value: c.InitialCluster, Reason: err.Error()})
	} else if c.Name != "" {
		if _, ok := members[c.Name]; !ok {
			errs = append(errs, &FieldError{Key: "metadataInitialCluster", Value: c.InitialCluster, Reason: fmt.Sprintf("must contain this member's name %q", c.Name)})
		}
	}
	return errors.Join(errs...)
}

func isUnspecifiedHost(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return h == "" || h == "0.0.0.0" || h == "::"
}

// checkURLs checks a list of member URLs: http or https, a host and an explicit port.
func checkURLs(key string, urls []string, required, allowUnspecified bool) error {
	if len(urls) == 0 {
		if required {
			return &FieldError{Key: key, Value: `""`, Reason: "must list at least one URL"}
		}
		return nil
	}
	for _, raw := range urls {
		if err := CheckMemberURL(raw); err != nil {
			return &FieldError{Key: key, Value: raw, Reason: err.Error()}
		}
		if !allowUnspecified && isUnspecifiedHost(raw) {
			return &FieldError{Key: key, Value: raw, Reason: "must name a reachable host, not all interfaces"}
		}
	}
	return nil
}

// CheckMemberURL checks one etcd member URL: http:// or https://, host and port, nothing else.
func CheckMemberURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("must start with http:// or https://")
	}
	if u.Host == "" || u.Hostname() == "" && u.Port() == "" {
		return fmt.Errorf("must have a host:port")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("must be only scheme://host:port")
	}
	p := u.Port()
	if p == "" {
		return fmt.Errorf("must have an explicit port")
	}
	if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port must be between 0 and 65535")
	}
	return nil
}

// ParseInitialCluster decodes an initial-cluster string, "name=peerURL,name=peerURL,...",
// into each member's peer URLs (a name may repeat to give a member several URLs, as in etcd).
func ParseInitialCluster(s string) (map[string][]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("is empty")
	}
	out := map[string][]string{}
	seen := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		name, raw, ok := strings.Cut(strings.TrimSpace(part), "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("entry %q: want name=peerURL", part)
		}
		raw = strings.TrimSpace(raw)
		if err := CheckMemberURL(raw); err != nil {
			return nil, fmt.Errorf("entry %q: %w", part, err)
		}
		if other, dup := seen[raw]; dup && other != name {
			return nil, fmt.Errorf("peer URL %s is given to both %s and %s", raw, other, name)
		}
		seen[raw] = name
		out[name] = append(out[name], raw)
		if len(out) > maxInitialClusterCount {
			return nil, fmt.Errorf("more than %d members", maxInitialClusterCount)
		}
	}
	return out, nil
}
