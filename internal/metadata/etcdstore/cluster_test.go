package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// freePorts reserves n loopback ports by listening on port 0 and closing again. Peer URLs of
// a static cluster must be known before any member starts, so port 0 cannot be used directly.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// TestStaticThreeMemberCluster starts three members from static configs, checks that they
// elect one leader, that a write through one member is read through another, and that the
// two survivors go on after the leader stops.
func TestStaticThreeMemberCluster(t *testing.T) {
	ports := freePorts(t, 6)
	var initial []string
	cfgs := make([]config.MetadataConfig, 3)
	for i := range cfgs {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i+1]))
	}
	dir := t.TempDir()
	for i := range cfgs {
		c := config.DefaultMetadataConfig()
		c.Name = fmt.Sprintf("m%d", i)
		c.DataDir = filepath.Join(dir, c.Name)
		c.ListenClientURLs = []string{fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])}
		c.ListenPeerURLs = []string{fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])}
		c.InitialCluster = strings.Join(initial, ",")
		c.HeartbeatInterval = 50 * time.Millisecond
		c.ElectionTimeout = 500 * time.Millisecond
		cfgs[i] = c
	}
	// Each member waits for a quorum, so they must start together.
	members := make([]*Embedded, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range cfgs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			members[i], errs[i] = StartEmbedded(ctx, cfgs[i], testLogger())
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		t.Cleanup(members[i].Close)
	}
	leader := waitOneLeader(t, members)

	stores := make([]*Store, 3)
	for i, m := range members {
		// Each store talks to one member only, so the read really goes through another one.
		s, err := Open(context.Background(), DefaultOptions(m.ClientURLs()...), testLogger())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	ctx := context.Background()
	writer, reader := (leader+1)%3, (leader+2)%3 // both followers: the write is forwarded
	v, err := stores[writer].Put(ctx, "/cluster/k", []byte("through a follower"), metadata.NotExists)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := stores[reader].Get(ctx, "/cluster/k")
	if err != nil || string(kv.Value) != "through a follower" || kv.Version != v {
		t.Fatalf("read through member %d: %+v %v", reader, kv, err)
	}

	// Stop the leader: the other two elect a new one and keep serving.
	members[leader].Close()
	_ = stores[leader].Close()
	rest := []*Embedded{members[writer], members[reader]}
	waitOneLeader(t, rest)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := stores[reader].Put(wctx, "/cluster/k", []byte("after failover"), v); err != nil {
		t.Fatal(err)
	}
	kv, err = stores[writer].Get(wctx, "/cluster/k")
	if err != nil || string(kv.Value) != "after failover" {
		t.Fatalf("after failover: %+v %v", kv, err)
	}
}

func waitOneLeader(t *testing.T, members []*Embedded) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		leaders, who := 0, -1
		for i, m := range members {
			if m.IsLeader() {
				leaders, who = leaders+1, i
			}
		}
		allKnow := true
		for _, m := range members {
			allKnow = allKnow && m.HasLeader()
		}
		if leaders == 1 && allKnow {
			return who
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d leaders after 30s", leaders)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartEmbeddedBadConfig(t *testing.T) {
	c := config.DefaultMetadataConfig()
	c.DataDir = t.TempDir()
	c.InitialCluster = "other=http://127.0.0.1:2380"
	_, err := StartEmbedded(context.Background(), c, testLogger())
	if !errors.Is(err, ErrEmbedConfig) || !strings.Contains(err.Error(), "metadataInitialCluster") {
		t.Fatalf("err = %v, want ErrEmbedConfig naming metadataInitialCluster", err)
	}
}

// A member of a cluster whose peers never come up reports that, instead of hanging.
func TestStartEmbeddedNoQuorum(t *testing.T) {
	ports := freePorts(t, 3)
	c := config.DefaultMetadataConfig()
	c.Name = "lonely"
	c.DataDir = filepath.Join(t.TempDir(), "etcd")
	c.ListenClientURLs = []string{fmt.Sprintf("http://127.0.0.1:%d", ports[0])}
	c.ListenPeerURLs = []string{fmt.Sprintf("http://127.0.0.1:%d", ports[1])}
	c.InitialCluster = fmt.Sprintf("lonely=http://127.0.0.1:%d,gone=http://127.0.0.1:%d", ports[1], ports[2])
	c.StartTimeout = time.Second
	_, err := StartEmbedded(context.Background(), c, testLogger())
	if !errors.Is(err, ErrEmbedNotReady) {
		t.Fatalf("err = %v, want ErrEmbedNotReady", err)
	}
}
