package config

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// KafkaConfig is the Kafka protocol front end (internal/kafka). Key names are the ones
// Kafka-on-Pulsar users know (kafkaListeners, kafkaAdvertisedListeners, kafkaTenant,
// kafkaNamespace) plus Kafka's own broker keys where one exists (group.* and
// message.max.bytes become groupMinSessionTimeoutMs, ..., in Pulsar's camel case).
type KafkaConfig struct {
	// Listeners is a comma-separated list of NAME://host:port the Kafka protocol listens on,
	// e.g. "PLAINTEXT://0.0.0.0:9092". Empty turns the Kafka protocol off (the broker
	// default); standalone turns it on. Port 0 picks a free port (tests).
	Listeners string `key:"kafkaListeners" help:"Kafka protocol listeners, NAME://host:port,... (empty: off)"`
	// AdvertisedListeners is what Metadata tells clients to connect to, per listener name;
	// empty means the listeners themselves with a wildcard host replaced by the broker's
	// advertised address.
	AdvertisedListeners string `key:"kafkaAdvertisedListeners" help:"Kafka listeners advertised in Metadata, NAME://host:port,... (default: kafkaListeners)"`
	// Tenant and Namespace hold the topics a plain Kafka topic name t maps to:
	// persistent://{kafkaTenant}/{kafkaNamespace}/t.
	Tenant    string `key:"kafkaTenant" help:"tenant of plain Kafka topic names"`
	Namespace string `key:"kafkaNamespace" help:"namespace of plain Kafka topic names"`

	// MaxRequestSize bounds one Kafka request (Kafka's socket.request.max.bytes); a larger
	// size prefix closes the connection before any of it is buffered.
	MaxRequestSize int `key:"kafkaMaxRequestSize" help:"largest Kafka request accepted, in bytes"`
	// MaxInflightRequests bounds the requests of one connection read but not yet answered;
	// beyond it the connection is not read (TCP pushes back on the client).
	MaxInflightRequests int `key:"kafkaMaxInflightRequests" help:"Kafka requests of one connection in progress before reading pauses"`
	// MaxFetchWaitMs caps a Fetch's max wait, whatever the client asks.
	MaxFetchWaitMs int `key:"kafkaMaxFetchWaitMs" help:"longest a Kafka Fetch waits for data, in ms"`
	// MaxFetchSessions bounds incremental fetch sessions (Kafka's
	// max.incremental.fetch.session.cache.slots).
	MaxFetchSessions int `key:"kafkaMaxFetchSessions" help:"most incremental fetch sessions kept"`

	// Group coordinator bounds (Kafka's group.min/max.session.timeout.ms,
	// group.initial.rebalance.delay.ms, offsets.retention.minutes).
	GroupMinSessionTimeoutMs     int `key:"groupMinSessionTimeoutMs" help:"smallest session timeout a Kafka group member may ask for, in ms"`
	GroupMaxSessionTimeoutMs     int `key:"groupMaxSessionTimeoutMs" help:"largest session timeout a Kafka group member may ask for, in ms"`
	GroupInitialRebalanceDelayMs int `key:"groupInitialRebalanceDelayMs" help:"wait for more members before the first rebalance of an empty Kafka group, in ms"`
	GroupMaxSize                 int `key:"groupMaxSize" help:"most members of one Kafka group"`
	MaxGroups                    int `key:"kafkaMaxGroups" help:"most Kafka groups one broker coordinates"`
	// OffsetMetadataMaxBytes bounds the metadata string of one offset commit (Kafka's
	// offset.metadata.max.bytes); it is kept in the group's cursor properties.
	OffsetMetadataMaxBytes int `key:"kafkaOffsetMetadataMaxBytes" help:"largest metadata string of a Kafka offset commit, in bytes"`
	// SASLAllowedMechanisms are the SASL mechanisms SaslHandshake offers (Kafka-on-Pulsar's
	// key; Kafka's sasl.enabled.mechanisms). All four by default: a SCRAM mechanism with
	// no credentials stored admits nobody, so offering it costs nothing.
	SASLAllowedMechanisms []string `key:"saslAllowedMechanisms" help:"SASL mechanisms the Kafka listener offers: PLAIN, OAUTHBEARER, SCRAM-SHA-256, SCRAM-SHA-512"`
}

// KafkaSASLMechanisms are the SASL mechanisms the Kafka front end implements.
var KafkaSASLMechanisms = []string{"PLAIN", "OAUTHBEARER", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// DefaultKafkaConfig returns the defaults: off, public/default, Kafka's own limits.
func DefaultKafkaConfig() KafkaConfig {
	return KafkaConfig{
		Tenant:                       "public",
		Namespace:                    "default",
		MaxRequestSize:               100 << 20,
		MaxInflightRequests:          32,
		MaxFetchWaitMs:               30_000,
		MaxFetchSessions:             1000,
		GroupMinSessionTimeoutMs:     6_000,
		GroupMaxSessionTimeoutMs:     1_800_000,
		GroupInitialRebalanceDelayMs: 3_000,
		GroupMaxSize:                 1000,
		MaxGroups:                    10_000,
		OffsetMetadataMaxBytes:       512,
		SASLAllowedMechanisms:        slices.Clone(KafkaSASLMechanisms),
	}
}

// Enabled tells whether the Kafka protocol listens at all.
func (c *KafkaConfig) Enabled() bool { return strings.TrimSpace(c.Listeners) != "" }

// KafkaListener is one parsed NAME://host:port entry.
type KafkaListener struct {
	Name string
	Host string
	Port int
}

// Addr is host:port.
func (l KafkaListener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// ParseKafkaListeners parses NAME://host:port,... (an empty host means every interface).
func ParseKafkaListeners(key, s string) ([]KafkaListener, error) {
	var out []KafkaListener
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, hp, ok := strings.Cut(part, "://")
		if !ok || name == "" {
			return nil, &FieldError{Key: key, Value: part, Reason: "must be NAME://host:port"}
		}
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			return nil, &FieldError{Key: key, Value: part, Reason: fmt.Sprintf("bad host:port: %v", err)}
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return nil, &FieldError{Key: key, Value: part, Reason: "port must be between 0 and 65535"}
		}
		name = strings.ToUpper(name)
		if seen[name] {
			return nil, &FieldError{Key: key, Value: part, Reason: "listener name " + name + " appears twice"}
		}
		seen[name] = true
		out = append(out, KafkaListener{Name: name, Host: host, Port: p})
	}
	return out, nil
}

// FetchWaitCap is MaxFetchWaitMs as a duration.
func (c *KafkaConfig) FetchWaitCap() time.Duration {
	return time.Duration(c.MaxFetchWaitMs) * time.Millisecond
}

// Validate checks the Kafka settings.
func (c *KafkaConfig) Validate() error {
	var lerr, aerr error
	if _, err := ParseKafkaListeners("kafkaListeners", c.Listeners); err != nil {
		lerr = err
	}
	if _, err := ParseKafkaListeners("kafkaAdvertisedListeners", c.AdvertisedListeners); err != nil {
		aerr = err
	}
	return errors.Join(lerr, aerr, c.validateSASL(),
		NotEmpty("kafkaTenant", c.Tenant),
		NotEmpty("kafkaNamespace", c.Namespace),
		Between("kafkaMaxRequestSize", c.MaxRequestSize, 1<<10, 1<<30),
		Between("kafkaMaxInflightRequests", c.MaxInflightRequests, 1, 1024),
		Between("kafkaMaxFetchWaitMs", c.MaxFetchWaitMs, 0, 300_000),
		Between("kafkaMaxFetchSessions", c.MaxFetchSessions, 0, 1_000_000),
		Between("groupMinSessionTimeoutMs", c.GroupMinSessionTimeoutMs, 1, c.GroupMaxSessionTimeoutMs),
		AtLeast("groupMaxSessionTimeoutMs", c.GroupMaxSessionTimeoutMs, 1),
		Between("groupInitialRebalanceDelayMs", c.GroupInitialRebalanceDelayMs, 0, 300_000),
		Between("groupMaxSize", c.GroupMaxSize, 1, 1_000_000),
		Between("kafkaMaxGroups", c.MaxGroups, 1, 10_000_000),
		Between("kafkaOffsetMetadataMaxBytes", c.OffsetMetadataMaxBytes, 0, 1<<20),
	)
}

// validateSASL checks saslAllowedMechanisms: known names (case as Kafka spells them, since
// clients send them so), at least one.
func (c *KafkaConfig) validateSASL() error {
	key := "saslAllowedMechanisms"
	if len(c.SASLAllowedMechanisms) == 0 {
		return &FieldError{Key: key, Value: `""`, Reason: "must list at least one of " + strings.Join(KafkaSASLMechanisms, ", ")}
	}
	for _, m := range c.SASLAllowedMechanisms {
		if !slices.Contains(KafkaSASLMechanisms, m) {
			return &FieldError{Key: key, Value: m, Reason: "unknown mechanism; known are " + strings.Join(KafkaSASLMechanisms, ", ")}
		}
	}
	return nil
}
