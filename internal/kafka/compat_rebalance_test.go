//go:build kafkacompat

package kafka

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// TestKafkaJavaGroupMemberKilled: two Java consumers (kafka-console-consumer, Kafka 4.x) share a
// group; one is SIGKILLed; once its session expires the survivor is given every partition
// and reads every record produced after the kill.
func TestKafkaJavaGroupMemberKilled(t *testing.T) {
	_, _, addr := startMem(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, addr))
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, "rebal"); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, addr, kgo.DefaultProduceTopic("rebal"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	produce := func(prefix string, n int) {
		for i := 0; i < n; i++ {
			prod.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}, nil)
		}
		if err := prod.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cli := testenv.NewKafkaCLI(t)
	consumer := func() *testenv.Process {
		return cli.Start(t, testenv.KafkaConsoleConsumerMain, "--bootstrap-server", addr, "--topic", "rebal",
			"--group", "rebal-group", "--from-beginning",
			"--consumer-property", "session.timeout.ms=6000", "--consumer-property", "heartbeat.interval.ms=500",
			"--consumer-property", "auto.commit.interval.ms=500")
	}
	members := func() int {
		gs, err := adm.DescribeGroups(ctx, "rebal-group")
		if err != nil {
			return -1
		}
		if g := gs["rebal-group"]; g.State == "Stable" {
			return len(g.Members)
		}
		return -1
	}
	a := consumer()
	waitFor(t, "the first consumer in the group", func() bool { return members() == 1 })
	b := consumer()
	waitFor(t, "both consumers in one generation", func() bool { return members() == 2 })
	produce("before", 100)
	waitFor(t, "the records before the kill consumed", func() bool {
		return strings.Count(a.Output()+b.Output(), "before-") >= 100
	})
	a.Kill()
	waitFor(t, "the killed member's session expired", func() bool { return members() == 1 })
	produce("after", 100)
	waitFor(t, "the survivor read every record produced after the kill", func() bool {
		out := b.Output()
		for i := 0; i < 100; i++ {
			if !strings.Contains(out, fmt.Sprintf("after-%d\n", i)) {
				return false
			}
		}
		return true
	})
}
