//go:build kafkacompat

package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// KafkaJSVersion is the KafkaJS release from npm the test runs.
const KafkaJSVersion = "kafkajs@2.2.4"

// TestKafkaJS produces with KafkaJS (gzip), consumes in a group and reads the group's
// offsets through its admin client.
func TestKafkaJS(t *testing.T) {
	_, _, addr := startMem(t)
	dir := testenv.NpmPackage(t, "kafkajs-2.2.4", KafkaJSVersion)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := testenv.RunNode(ctx, dir, kafkajsScript, "BOOTSTRAP="+addr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "CONSUMED 100") || !strings.Contains(out, "COMMITTED 100") {
		t.Fatalf("kafkajs run:\n%s", out)
	}
}

const kafkajsScript = `
const { Kafka, CompressionTypes, logLevel } = require('kafkajs')
const kafka = new Kafka({ clientId: 'kjs', brokers: [process.env.BOOTSTRAP], logLevel: logLevel.WARN })
async function main() {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic: 'kjs', numPartitions: 2 }] })
  const producer = kafka.producer()
  await producer.connect()
  const messages = []
  for (let i = 0; i < 100; i++) messages.push({ key: 'k' + (i % 5), value: 'v' + i, headers: { h: 'x' } })
  await producer.send({ topic: 'kjs', compression: CompressionTypes.GZIP, messages })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: 'kjs-group' })
  await consumer.connect()
  await consumer.subscribe({ topic: 'kjs', fromBeginning: true })
  const seen = new Set()
  await new Promise((resolve, reject) => {
    consumer.run({ eachMessage: async ({ message }) => {
      if (message.headers.h.toString() !== 'x') reject(new Error('header lost'))
      seen.add(message.value.toString())
      if (seen.size === 100) resolve()
    } }).catch(reject)
  })
  console.log('CONSUMED ' + seen.size)
  await consumer.disconnect()
  const offs = await admin.fetchOffsets({ groupId: 'kjs-group', topics: ['kjs'] })
  let sum = 0
  for (const t of offs) for (const p of t.partitions) sum += Number(p.offset)
  console.log('COMMITTED ' + sum)
  await admin.disconnect()
}
main().then(() => process.exit(0), e => { console.error(e); process.exit(1) })
`
