//go:build kafkacompat

package e2e

import (
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/magnetar-io/magnetar/internal/devcluster"
)

// kafkaAddrOf reads a cluster broker's Kafka address from its ready line.
func kafkaAddrOf(t *testing.T, p *devcluster.Proc) string {
	t.Helper()
	re := regexp.MustCompile(`magnetar broker ready.*kafka[=":]+([0-9.]+:[0-9]+)`)
	var addr string
	waitFor(t, "the Kafka address of "+p.Name, func() (bool, error) {
		b, err := os.ReadFile(p.Log())
		if m := re.FindSubmatch(b); m != nil {
			addr = string(m[1])
			return true, nil
		}
		return false, err
	})
	return addr
}

// Two brokers: Metadata names the owner of each partition's bundle as its leader, the
// client produces to and fetches from each owner, and a group's commits on partitions its
// coordinator does not own are kept too.
func TestKafkaClusterLeadersAreBundleOwners(t *testing.T) {
	c := startClusterWith(t, 2, "--kafka-listeners", "PLAINTEXT://127.0.0.1:0")
	addrs := map[string]*devcluster.Proc{}
	for _, b := range c.Brokers {
		addrs[kafkaAddrOf(t, b)] = b
	}
	var seed string
	for a := range addrs {
		seed = a
	}
	ctx := ctxFor(t, 3*time.Minute)
	adm := kadm.NewClient(kafkaClient(t, seed))
	const parts = 8
	if _, err := adm.CreateTopic(ctx, parts, 1, nil, "ck"); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, "ck")
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 2 {
		t.Fatalf("metadata lists %d brokers: %+v", len(md.Brokers), md.Brokers)
	}
	nodes := map[int32]string{}
	for _, b := range md.Brokers {
		nodes[b.NodeID] = hostPort(b.Host, b.Port)
	}
	leaders := map[string]int{}
	for _, pd := range md.Topics["ck"].Partitions {
		owner := ownerOf(t, c, "persistent://public/default/ck-partition-"+strconv.Itoa(int(pd.Partition)))
		if got := addrs[nodes[pd.Leader]]; got != owner {
			t.Fatalf("partition %d: leader %d (%s), bundle owner %s", pd.Partition, pd.Leader, nodes[pd.Leader], owner.Name)
		}
		leaders[owner.Name]++
	}
	t.Logf("partitions per broker: %v", leaders)

	prod := kafkaClient(t, seed, kgo.DefaultProduceTopic("ck"))
	const n = 200
	for i := 0; i < n; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	group := kafkaClient(t, seed, kgo.ConsumeTopics("ck"), kgo.ConsumerGroup("cg"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if got := len(consumeKafka(t, group, n)); got != n {
		t.Fatalf("consumed %d of %d", got, n)
	}
	if err := group.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	group.Close()
	committed, err := adm.FetchOffsets(ctx, "cg")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "ck")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if cm, _ := committed.Lookup("ck", o.Partition); cm.At != o.Offset {
			t.Fatalf("partition %d committed %d, end %d", o.Partition, cm.At, o.Offset)
		}
	})
}
