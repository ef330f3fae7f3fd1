//go:build kafkacompat

package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// Kafka transactions with Kafka's own Java tools on a real standalone (transactions on by
// default there): kafka-producer-perf-test writes in transactions, franz-go adds an aborted
// one and a committed one, and kafka-console-consumer reads with read_committed (no aborted
// record) and read_uncommitted (the aborted ones too).
func TestKafkaTxnJavaToolsOnStandalone(t *testing.T) {
	_, _, _, addr := startKafkaStandalone(t, t.TempDir(), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	adm := kadm.NewClient(kafkaClient(t, addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "txn-tools"); err != nil {
		t.Fatal(err)
	}
	cli := testenv.NewKafkaCLI(t)
	run := func(main string, args ...string) string {
		t.Helper()
		out, err := cli.Run(main, 3*time.Minute, nil, args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return out
	}
	const perf = 2000
	out := run(testenv.KafkaProducerPerfMain, "--topic", "txn-tools", "--num-records", "2000", "--record-size", "50",
		"--throughput", "-1", "--transactional-id", "perf-tx", "--transaction-duration-ms", "100",
		"--producer-props", "bootstrap.servers="+addr, "acks=all")
	if !strings.Contains(out, "2000 records sent") {
		t.Fatalf("transactional producer perf test: %s", out)
	}

	prod := kafkaClient(t, addr, kgo.TransactionalID("go-tx"), kgo.DefaultProduceTopic("txn-tools"))
	for _, c := range []struct {
		commit bool
		values []string
	}{{false, []string{"aborted-1", "aborted-2", "aborted-3"}}, {true, []string{"committed-last"}}} {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range c.values {
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(c.commit)); err != nil {
			t.Fatal(err)
		}
	}

	consume := func(isolation string, n int) (perfLines int, others []string) {
		t.Helper()
		out := run(testenv.KafkaConsoleConsumerMain, "--bootstrap-server", addr, "--topic", "txn-tools",
			"--from-beginning", "--isolation-level", isolation, "--max-messages", strconv.Itoa(n), "--timeout-ms", "60000")
		for _, l := range strings.Split(out, "\n") {
			switch {
			case len(l) == 50 && strings.ToUpper(l) == l && !strings.Contains(l, " "):
				perfLines++
			case strings.HasPrefix(l, "aborted-"), strings.HasPrefix(l, "committed-"):
				others = append(others, l)
			}
		}
		return perfLines, others
	}
	if n, others := consume("read_committed", perf+1); n != perf || strings.Join(others, ",") != "committed-last" {
		t.Fatalf("read_committed: %d perf records (want %d) and %v (want [committed-last])", n, perf, others)
	}
	if n, others := consume("read_uncommitted", perf+4); n != perf || strings.Join(others, ",") != "aborted-1,aborted-2,aborted-3,committed-last" {
		t.Fatalf("read_uncommitted: %d perf records (want %d) and %v", n, perf, others)
	}
}
