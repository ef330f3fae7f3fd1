package connector

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Kind is whether an instance runs a source or a sink.
type Kind int

// Kinds.
const (
	KindSource Kind = iota + 1
	KindSink
)

// Processing guarantees (Pulsar's names).
const (
	AtLeastOnce     = "ATLEAST_ONCE"
	AtMostOnce      = "ATMOST_ONCE"
	EffectivelyOnce = "EFFECTIVELY_ONCE"
)

// Subscription types of a sink's consumer.
const (
	SubShared    = "Shared"
	SubFailover  = "Failover"
	SubKeyShared = "Key_Shared"
)

// Spec is everything one connector instance runs with: the worker builds it from the
// source's or sink's record.
type Spec struct {
	Kind                       Kind
	Tenant, Namespace, Name    string
	InstanceID, NumInstances   int
	Archive                    string // builtin://<name>
	Configs                    map[string]any
	Secrets                    map[string]any
	ProcessingGuarantees       string
	BrokerServiceURL           string
	AuthPlugin, AuthParams     string
	TLSTrustCertsFilePath      string
	TLSAllowInsecureConnection bool
	WorkerID                   string
	Offsets                    OffsetStore
	Logger                     *slog.Logger
	MaxPendingMessages         int // producer queue (source) / receiver queue (sink)
	CompressionType            string
	BatchingDisabled           bool
	SourceTopic                string // source: topicName
	SourceSchemaType           string // source: schemaType ("" or BYTES: none)
	Inputs                     []string
	TopicsPattern              string
	SubscriptionName           string
	SubscriptionType           string
	SubscriptionPosition       string // Latest (default) or Earliest
	MaxMessageRetries          int
	DeadLetterTopic            string
	NegativeAckRedeliveryDelay time.Duration
	ReceiverQueueSize          int
	RetryBackoffInitial        time.Duration
	RetryBackoffMax            time.Duration
	OffsetFlushInterval        time.Duration
}

// FQFN is tenant/namespace/name.
func (s *Spec) FQFN() string { return s.Tenant + "/" + s.Namespace + "/" + s.Name }

func (s *Spec) normalize() error {
	if s.Tenant == "" || s.Namespace == "" || s.Name == "" {
		return errors.New("connector: tenant, namespace and name are required")
	}
	if s.BrokerServiceURL == "" {
		return errors.New("connector: no broker service URL")
	}
	if s.NumInstances <= 0 {
		s.NumInstances = 1
	}
	switch s.ProcessingGuarantees {
	case "":
		s.ProcessingGuarantees = AtLeastOnce
	case AtLeastOnce, AtMostOnce, EffectivelyOnce:
	default:
		return fmt.Errorf("connector: processingGuarantees %q is not ATLEAST_ONCE, ATMOST_ONCE or EFFECTIVELY_ONCE", s.ProcessingGuarantees)
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Offsets == nil {
		s.Offsets = &MemoryOffsets{}
	}
	if s.MaxPendingMessages <= 0 {
		s.MaxPendingMessages = 1000
	}
	if s.RetryBackoffInitial <= 0 {
		s.RetryBackoffInitial = 100 * time.Millisecond
	}
	if s.RetryBackoffMax <= 0 {
		s.RetryBackoffMax = 30 * time.Second
	}
	if s.NegativeAckRedeliveryDelay <= 0 {
		s.NegativeAckRedeliveryDelay = time.Second
	}
	if s.OffsetFlushInterval <= 0 {
		s.OffsetFlushInterval = time.Second
	}
	if s.Kind == KindSink {
		if len(s.Inputs) == 0 && s.TopicsPattern == "" {
			return errors.New("connector: a sink needs inputs or topicsPattern")
		}
		if s.SubscriptionName == "" {
			s.SubscriptionName = s.FQFN()
		}
		if s.SubscriptionType == "" {
			s.SubscriptionType = SubShared
		}
		if s.ProcessingGuarantees == EffectivelyOnce {
			s.SubscriptionType = SubFailover
		}
		if s.MaxMessageRetries < 0 {
			return fmt.Errorf("connector: maxMessageRetries %d is negative", s.MaxMessageRetries)
		}
	}
	return nil
}

// deadLetterTopic is where failed records of input go: deadLetterTopic, or
// <input>-<tenant>-<namespace>-<name>-DLQ as for functions.
func (s *Spec) deadLetterTopic(input string) string {
	if s.DeadLetterTopic != "" {
		return s.DeadLetterTopic
	}
	return input + "-" + strings.ReplaceAll(s.FQFN(), "/", "-") + "-DLQ"
}
