package standalone_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// BenchmarkPublishSecurity measures publish throughput and send latency with the official Go
// client against one secure standalone (startSecure: TLS listeners, the token provider,
// authorization on) in three ways in: plaintext as the anonymous role, TLS as the anonymous
// role, and TLS with a token (the superuser's). The same server serves all three, so the
// difference is what TLS and token authentication cost; authorization is decided once per
// producer, never per message (issue 16: the target is >= 85% of plaintext throughput and a
// p99 within 1.2x). Each iteration is one 1 KiB message sent asynchronously with batching;
// it reports msg/s, MB/s and the p50/p99 send latency in ms. make bench-security runs it
// (BENCH_SECURITY_TIME sets -benchtime); results go in docs/benchmarks.md with the command.
func BenchmarkPublishSecurity(b *testing.B) {
	f := startSecure(b, nil)
	payload := make([]byte, 1024)
	for _, m := range []struct {
		name string
		o    pulsar.ClientOptions
	}{
		{"plaintext", pulsar.ClientOptions{URL: f.brokerURL}},
		{"tls", pulsar.ClientOptions{URL: f.brokerTLS, TLSTrustCertsFilePath: f.ca.CertFile, TLSValidateHostname: true}},
		{"tls+token", pulsar.ClientOptions{URL: f.brokerTLS, TLSTrustCertsFilePath: f.ca.CertFile, TLSValidateHostname: true,
			Authentication: pulsar.NewAuthenticationToken(f.adminToken)}},
	} {
		b.Run(m.name, func(b *testing.B) {
			o := m.o
			o.OperationTimeout = time.Minute
			c := f.client(b, o)
			p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topicIn("public/default"), MaxPendingMessages: 10000,
				BatchingMaxPublishDelay: time.Millisecond, SendTimeout: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			ctx := context.Background()
			// One warm-up send: the connection, the lookup and the producer are not measured.
			if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: payload}); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, b.N)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var sendErr error
			wg.Add(b.N)
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				sent := time.Now()
				p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: payload}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
					lat[i] = time.Since(sent)
					if err != nil {
						mu.Lock()
						sendErr = err
						mu.Unlock()
					}
					wg.Done()
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if sendErr != nil {
				b.Fatal(sendErr)
			}
			slices.Sort(lat)
			ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Millisecond) }
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msg/s")
			b.ReportMetric(ms(0.50), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}
