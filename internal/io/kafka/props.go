package kafka

import (
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// Kafka client properties: Pulsar's consumerConfigProperties (source) and
// producerConfigProperties (sink) hand Kafka's own client settings to the client. Ours is
// franz-go, so each Kafka property we can honour is translated to its option here. As in
// Pulsar's connector, the connector's own fields (groupId, acks, ...) win over the same
// setting given as a property; a property only replaces the field's default. Properties
// the connector sets itself (serializers) are ignored, and any other property is named in
// one warning when the connector opens, as Kafka's client warns about unknown configs,
// rather than refused: a configuration that works on Pulsar must not fail here.

const (
	consumerProps = "consumerConfigProperties"
	producerProps = "producerConfigProperties"
)

// fieldOf maps Kafka property names to the connector fields that carry the same setting.
var fieldOf = map[string]string{
	"bootstrap.servers":       "bootstrapServers",
	"security.protocol":       "securityProtocol",
	"sasl.mechanism":          "saslMechanism",
	"sasl.jaas.config":        "saslJaasConfig",
	"ssl.truststore.location": "sslTruststoreLocation",
	// consumer
	"group.id":                "groupId",
	"fetch.min.bytes":         "fetchMinBytes",
	"session.timeout.ms":      "sessionTimeoutMs",
	"heartbeat.interval.ms":   "heartbeatIntervalMs",
	"auto.offset.reset":       "autoOffsetReset",
	"auto.commit.interval.ms": "autoCommitIntervalMs",
	"enable.auto.commit":      "autoCommitEnabled",
	// producer
	"acks":             "acks",
	"batch.size":       "batchSize",
	"max.request.size": "maxRequestSize",
	"linger.ms":        "batchTimeMs", // records wait for their batch: the sink's batching
}

// ignored are properties the connector sets itself: bytes in, bytes out.
var ignored = map[string]bool{
	"key.serializer": true, "value.serializer": true, "key.deserializer": true, "value.deserializer": true,
}

// property translates one Kafka property into franz-go options.
type property func(p connector.Config, key string) []kgo.Opt

func millisOpt(f func(time.Duration) kgo.Opt) property {
	return func(p connector.Config, key string) []kgo.Opt { return []kgo.Opt{f(p.Millis(key, 0))} }
}

func bytesOpt[O kgo.Opt](f func(int32) O) property {
	return func(p connector.Config, key string) []kgo.Opt {
		return []kgo.Opt{f(int32(p.IntRange(key, 1<<20, 1, 1<<30)))}
	}
}

var commonProps = map[string]property{
	"client.id":                          func(p connector.Config, k string) []kgo.Opt { return []kgo.Opt{kgo.ClientID(p.String(k, ""))} },
	"metadata.max.age.ms":                millisOpt(func(d time.Duration) kgo.Opt { return kgo.MetadataMaxAge(d) }),
	"connections.max.idle.ms":            millisOpt(func(d time.Duration) kgo.Opt { return kgo.ConnIdleTimeout(d) }),
	"socket.connection.setup.timeout.ms": millisOpt(func(d time.Duration) kgo.Opt { return kgo.DialTimeout(d) }),
	"retry.backoff.ms": millisOpt(func(d time.Duration) kgo.Opt {
		return kgo.RetryBackoffFn(func(int) time.Duration { return d })
	}),
}

var consumerOnly = map[string]property{
	"fetch.max.bytes":           bytesOpt(kgo.FetchMaxBytes),
	"max.partition.fetch.bytes": bytesOpt(kgo.FetchMaxPartitionBytes),
	"fetch.max.wait.ms":         millisOpt(func(d time.Duration) kgo.Opt { return kgo.FetchMaxWait(d) }),
	"client.rack":               func(p connector.Config, k string) []kgo.Opt { return []kgo.Opt{kgo.Rack(p.String(k, ""))} },
	"group.instance.id":         func(p connector.Config, k string) []kgo.Opt { return []kgo.Opt{kgo.InstanceID(p.String(k, ""))} },
	"isolation.level": func(p connector.Config, k string) []kgo.Opt {
		if p.OneOf(k, "read_uncommitted", "read_uncommitted", "read_committed") == "read_committed" {
			return []kgo.Opt{kgo.FetchIsolationLevel(kgo.ReadCommitted())}
		}
		return []kgo.Opt{kgo.FetchIsolationLevel(kgo.ReadUncommitted())}
	},
	"partition.assignment.strategy": func(p connector.Config, k string) []kgo.Opt {
		var bs []kgo.GroupBalancer
		for _, name := range p.List(k) {
			switch short := strings.ToLower(name[strings.LastIndex(name, ".")+1:]); short {
			case "rangeassignor", "range":
				bs = append(bs, kgo.RangeBalancer())
			case "roundrobinassignor", "roundrobin":
				bs = append(bs, kgo.RoundRobinBalancer())
			case "stickyassignor", "sticky":
				bs = append(bs, kgo.StickyBalancer())
			case "cooperativestickyassignor", "cooperative-sticky":
				bs = append(bs, kgo.CooperativeStickyBalancer())
			default:
				p.OneOf(k, "", "RangeAssignor", "RoundRobinAssignor", "StickyAssignor", "CooperativeStickyAssignor")
			}
		}
		if len(bs) == 0 {
			return nil
		}
		return []kgo.Opt{kgo.Balancers(bs...)}
	},
}

var producerOnly = map[string]property{
	"compression.type": func(p connector.Config, k string) []kgo.Opt {
		codec := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
			"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
		return []kgo.Opt{kgo.ProducerBatchCompression(codec[p.OneOf(k, "none", "none", "gzip", "snappy", "lz4", "zstd")])}
	},
	"enable.idempotence": func(p connector.Config, k string) []kgo.Opt {
		if !p.Bool(k, true) {
			return []kgo.Opt{kgo.DisableIdempotentWrite()}
		}
		return nil
	},
	"max.in.flight.requests.per.connection": func(p connector.Config, k string) []kgo.Opt {
		return []kgo.Opt{kgo.MaxProduceRequestsInflightPerBroker(int(p.IntRange(k, 5, 1, 1000)))}
	},
	"retries": func(p connector.Config, k string) []kgo.Opt {
		return []kgo.Opt{kgo.RecordRetries(int(p.IntRange(k, 0, 0, 1<<31-1)))}
	},
	"delivery.timeout.ms": millisOpt(func(d time.Duration) kgo.Opt { return kgo.RecordDeliveryTimeout(d) }),
	"request.timeout.ms":  millisOpt(func(d time.Duration) kgo.Opt { return kgo.ProduceRequestTimeout(d) }),
	"buffer.memory": func(p connector.Config, k string) []kgo.Opt {
		return []kgo.Opt{kgo.MaxBufferedBytes(int(p.IntRange(k, 32<<20, 1024, 1<<40)))}
	},
}

// withProperties reads the properties under key (consumerProps or producerProps): it
// returns c with the properties that carry a connector field as that field's default, the
// options of the others, and the names of those it does not know.
func withProperties(c connector.Config, key string, own map[string]property) (connector.Config, []kgo.Opt, []string) {
	p := c.Sub(key)
	defaults := map[string]any{}
	var opts []kgo.Opt
	var unknown []string
	for _, k := range p.Keys() {
		if f, ok := fieldOf[k]; ok {
			defaults[f] = p.Raw()[k]
			continue
		}
		if ignored[k] {
			continue
		}
		if t, ok := commonProps[k]; ok {
			opts = append(opts, t(p, k)...)
		} else if t, ok := own[k]; ok {
			opts = append(opts, t(p, k)...)
		} else {
			unknown = append(unknown, k)
		}
	}
	return c.Defaults(defaults), opts, unknown
}

func warnUnknown(log *slog.Logger, key string, unknown []string) {
	if len(unknown) > 0 {
		log.Warn("kafka: these Kafka client properties are not supported here and are ignored", "configs", key, "properties", unknown)
	}
}
