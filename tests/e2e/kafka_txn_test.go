//go:build kafkacompat

package e2e

import (
	"context"
	"slices"
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

// Kafka's kafka-transactions.sh against a real standalone: list, describe,
// describe-producers and find-hanging show a transaction franz-go left open (its
// transactional id, Ongoing, its partition and first offset), and abort by that start
// offset ends it: the last stable offset reaches the high watermark and read_committed
// gets the committed records around it and never the aborted one.
func TestKafkaTransactionsToolOnStandalone(t *testing.T) {
	_, _, _, addr := startKafkaStandalone(t, t.TempDir(), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	adm := kadm.NewClient(kafkaClient(t, addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "txn-admin"); err != nil {
		t.Fatal(err)
	}
	prod := kafkaClient(t, addr, kgo.TransactionalID("tool-tx"), kgo.DefaultProduceTopic("txn-admin"))
	for i, v := range []string{"committed", "open"} {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
	}
	pid, _, err := prod.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	spid := strconv.FormatInt(pid, 10)

	cli := testenv.NewKafkaCLI(t)
	tool := func(args ...string) string {
		t.Helper()
		out, err := cli.Run(testenv.KafkaTransactionsMain, 3*time.Minute, nil, append([]string{"--bootstrap-server", addr}, args...)...)
		if err != nil {
			t.Fatalf("kafka-transactions %v: %v\n%s", args, err, out)
		}
		t.Logf("kafka-transactions %v:\n%s", args, out)
		return out
	}
	// row is the fields of the first output line that holds every one of want.
	row := func(out string, want ...string) []string {
		t.Helper()
	lines:
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			for _, w := range want {
				if !slices.Contains(f, w) {
					continue lines
				}
			}
			return f
		}
		t.Fatalf("no line with %v in:\n%s", want, out)
		return nil
	}
	row(tool("list"), "tool-tx", spid, "Ongoing")
	row(tool("describe", "--transactional-id", "tool-tx"), "tool-tx", spid, "Ongoing", "txn-admin-0")
	// The open transaction starts at offset 2 (committed, its marker, open).
	row(tool("describe-producers", "--topic", "txn-admin", "--partition", "0"), spid, "2")
	// It is open but not hanging (its coordinator has it, with this partition), even when
	// every open transaction is a candidate.
	if out := tool("find-hanging", "--topic", "txn-admin", "--max-transaction-timeout", "0"); strings.Contains(out, spid) {
		t.Fatalf("find-hanging reported the live transaction:\n%s", out)
	}
	tool("abort", "--topic", "txn-admin", "--partition", "0", "--start-offset", "2")

	end, err := adm.ListEndOffsets(ctx, "txn-admin")
	if err != nil {
		t.Fatal(err)
	}
	stable, err := adm.ListCommittedOffsets(ctx, "txn-admin")
	if err != nil {
		t.Fatal(err)
	}
	hw, _ := end.Lookup("txn-admin", 0)
	lso, _ := stable.Lookup("txn-admin", 0)
	if hw.Offset != 4 || lso.Offset != 4 {
		t.Fatalf("after the abort: high watermark %d, last stable offset %d, want 4 and 4", hw.Offset, lso.Offset)
	}
	row(tool("list"), "tool-tx", spid, "CompleteAbort")
	// A later transaction is readable past the aborted one.
	prod2 := kafkaClient(t, addr, kgo.TransactionalID("tool-tx-2"), kgo.DefaultProduceTopic("txn-admin"))
	if err := prod2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod2.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := prod2.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	cons := kafkaClient(t, addr, kgo.ConsumeTopics("txn-admin"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var got []string
	for fs := cons.PollFetches(ctx); ; fs = cons.PollFetches(ctx) {
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if len(got) >= 2 {
			break
		}
	}
	if strings.Join(got, ",") != "committed,after" {
		t.Fatalf("read_committed after the abort read %v", got)
	}
}
