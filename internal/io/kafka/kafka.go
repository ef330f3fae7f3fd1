package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// Definition is the kafka connector: a source and a sink.
func Definition() *connector.Definition {
	common := []connector.Field{
		{Name: "bootstrapServers", TypeName: "String", Attributes: map[string]string{"required": "true", "help": "host:port,... of the Kafka cluster"}},
		{Name: "topic", TypeName: "String", Attributes: map[string]string{"required": "true", "help": "the Kafka topic"}},
		{Name: "securityProtocol", TypeName: "String", Attributes: map[string]string{"defaultValue": "PLAINTEXT"}},
		{Name: "saslMechanism", TypeName: "String", Attributes: map[string]string{"defaultValue": "PLAIN"}},
		{Name: "saslJaasConfig", TypeName: "String", Attributes: map[string]string{"sensitive": "true"}},
	}
	return &connector.Definition{
		Name: "kafka", Description: "Kafka source and sink connector",
		SourceClass: "org.apache.pulsar.io.kafka.KafkaBytesSource", SinkClass: "org.apache.pulsar.io.kafka.KafkaBytesSink",
		NewSource: func() connector.Source { return &source{} }, NewSink: func() connector.Sink { return &sink{} },
		SourceFields: append(append([]connector.Field(nil), common...),
			connector.Field{Name: "groupId", TypeName: "String", Attributes: map[string]string{"required": "true"}},
			connector.Field{Name: "autoCommitIntervalMs", TypeName: "long", Attributes: map[string]string{"defaultValue": "5000"}},
			connector.Field{Name: "autoOffsetReset", TypeName: "String", Attributes: map[string]string{"defaultValue": "earliest"}},
			connector.Field{Name: "copyHeadersEnabled", TypeName: "boolean", Attributes: map[string]string{"defaultValue": "false"}}),
		SinkFields: append(append([]connector.Field(nil), common...),
			connector.Field{Name: "acks", TypeName: "String", Attributes: map[string]string{"defaultValue": "all"}},
			connector.Field{Name: "batchSize", TypeName: "long", Attributes: map[string]string{"defaultValue": "16384"}},
			connector.Field{Name: "maxRequestSize", TypeName: "long", Attributes: map[string]string{"defaultValue": "1048576"}}),
	}
}

// clientOpts reads the configs both sides share into franz-go options.
func clientOpts(c connector.Config) ([]kgo.Opt, string) {
	servers := c.List("bootstrapServers")
	if len(servers) == 0 {
		c.Required("bootstrapServers")
	}
	topic := c.Required("topic")
	opts := []kgo.Opt{kgo.SeedBrokers(servers...)}
	proto := c.OneOf("securityProtocol", "PLAINTEXT", "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
	if proto == "SSL" || proto == "SASL_SSL" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if p := c.String("sslTruststoreLocation", ""); p != "" {
			pem, err := os.ReadFile(p)
			pool := x509.NewCertPool()
			if err != nil || !pool.AppendCertsFromPEM(pem) {
				c.Required("sslTruststoreLocation (a readable PEM file of CA certificates)")
			}
			tc.RootCAs = pool
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if strings.HasPrefix(proto, "SASL") {
		user, pass := jaasCredentials(c.String("saslJaasConfig", ""))
		switch c.OneOf("saslMechanism", "PLAIN", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") {
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		}
	}
	return opts, topic
}

var jaasField = regexp.MustCompile(`(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"`)

// jaasCredentials reads username and password from a JAAS login module line
// (org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";).
func jaasCredentials(jaas string) (user, pass string) {
	for _, m := range jaasField.FindAllStringSubmatch(jaas, -1) {
		v := strings.ReplaceAll(strings.ReplaceAll(m[2], `\"`, `"`), `\\`, `\`)
		if m[1] == "username" {
			user = v
		} else {
			pass = v
		}
	}
	return user, pass
}

func wrapKafka(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("kafka: %s: %w", what, err)
}
