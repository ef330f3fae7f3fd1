package testenv

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// KafkaToolsSuite runs Kafka's own command-line tools against the Kafka protocol at addr:
// kafka-topics (create, list, describe, delete), kafka-console-producer and -consumer with
// a group, kafka-consumer-groups (describe, list, reset-offsets --to-earliest) and
// kafka-producer-perf-test. It creates the topics "cli" (3 partitions) and "perf".
func KafkaToolsSuite(t *testing.T, addr string) {
	t.Helper()
	cli := NewKafkaCLI(t)
	run := func(main string, stdin string, args ...string) string {
		t.Helper()
		out, err := cli.Run(main, 3*time.Minute, []byte(stdin), args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return out
	}
	bs := "--bootstrap-server"
	run(KafkaTopicsMain, "", bs, addr, "--create", "--topic", "cli", "--partitions", "3", "--replication-factor", "1")
	if out := run(KafkaTopicsMain, "", bs, addr, "--list"); !strings.Contains(out, "cli") {
		t.Fatalf("--list: %s", out)
	}
	if out := run(KafkaTopicsMain, "", bs, addr, "--describe", "--topic", "cli"); !strings.Contains(out, "PartitionCount: 3") {
		t.Fatalf("--describe: %s", out)
	}
	var lines []string
	for i := 0; i < 30; i++ {
		lines = append(lines, fmt.Sprintf("line-%02d", i))
	}
	run(KafkaConsoleProducerMain, strings.Join(lines, "\n")+"\n", bs, addr, "--topic", "cli", "--producer-property", "acks=all")
	consume := func() []string {
		out := run(KafkaConsoleConsumerMain, "", bs, addr, "--topic", "cli", "--group", "cli-group",
			"--from-beginning", "--max-messages", "30", "--timeout-ms", "60000")
		var got []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "line-") {
				got = append(got, l)
			}
		}
		return got
	}
	if got := consume(); len(got) != 30 {
		t.Fatalf("console consumer read %d of 30 lines: %v", len(got), got)
	}
	out := run(KafkaConsumerGroupsMain, "", bs, addr, "--describe", "--group", "cli-group")
	if !strings.Contains(out, "cli") || !strings.Contains(out, "LAG") {
		t.Fatalf("consumer-groups --describe: %s", out)
	}
	if out := run(KafkaConsumerGroupsMain, "", bs, addr, "--list"); !strings.Contains(out, "cli-group") {
		t.Fatalf("consumer-groups --list: %s", out)
	}
	run(KafkaConsumerGroupsMain, "", bs, addr, "--reset-offsets", "--to-earliest", "--execute", "--topic", "cli", "--group", "cli-group")
	if got := consume(); len(got) != 30 {
		t.Fatalf("after --reset-offsets --to-earliest the group read %d of 30 lines again", len(got))
	}
	out = run(KafkaProducerPerfMain, "", "--topic", "perf", "--num-records", "5000", "--record-size", "100",
		"--throughput", "-1", "--producer-props", "bootstrap.servers="+addr, "acks=all", "compression.type=lz4")
	if !strings.Contains(out, "5000 records sent") {
		t.Fatalf("producer perf test: %s", out)
	}
	run(KafkaTopicsMain, "", bs, addr, "--delete", "--topic", "cli")
	if out := run(KafkaTopicsMain, "", bs, addr, "--list"); strings.Contains(out, "cli\n") {
		t.Fatalf("deleted topic still listed: %s", out)
	}
}
