package functions

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// SourceConfig is a source's configuration as the admin API takes and returns it: Pulsar's
// SourceConfig JSON names (pulsaradmin's utils.SourceConfig).
type SourceConfig struct {
	Tenant               string           `json:"tenant,omitempty"`
	Namespace            string           `json:"namespace,omitempty"`
	Name                 string           `json:"name,omitempty"`
	ClassName            string           `json:"className,omitempty"`
	ProducerConfig       *ProducerConfig  `json:"producerConfig,omitempty"`
	TopicName            string           `json:"topicName,omitempty"`
	SerdeClassName       string           `json:"serdeClassName,omitempty"`
	SchemaType           string           `json:"schemaType,omitempty"`
	Configs              map[string]any   `json:"configs,omitempty"`
	Secrets              map[string]any   `json:"secrets,omitempty"`
	Parallelism          int              `json:"parallelism,omitempty"`
	ProcessingGuarantees string           `json:"processingGuarantees,omitempty"`
	Resources            *Resources       `json:"resources,omitempty"`
	Archive              string           `json:"archive,omitempty"`
	RuntimeFlags         string           `json:"runtimeFlags,omitempty"`
	CustomRuntimeOptions string           `json:"customRuntimeOptions,omitempty"`
	BatchSourceConfig    *json.RawMessage `json:"batchSourceConfig,omitempty"`
	BatchBuilder         string           `json:"batchBuilder,omitempty"`
	LogTopic             string           `json:"logTopic,omitempty"`
	SourceType           string           `json:"sourceType,omitempty"` // pulsaradmin sends it; means archive builtin://<type>
}

// ProducerConfig is a source's producer settings (Pulsar's ProducerConfig).
type ProducerConfig struct {
	MaxPendingMessages                 int              `json:"maxPendingMessages,omitempty"`
	MaxPendingMessagesAcrossPartitions int              `json:"maxPendingMessagesAcrossPartitions,omitempty"`
	UseThreadLocalProducers            bool             `json:"useThreadLocalProducers,omitempty"`
	CryptoConfig                       *json.RawMessage `json:"cryptoConfig,omitempty"`
	BatchBuilder                       string           `json:"batchBuilder,omitempty"`
	CompressionType                    string           `json:"compressionType,omitempty"`
}

// SinkConfig is a sink's configuration: Pulsar's SinkConfig JSON names.
type SinkConfig struct {
	Tenant                       string                    `json:"tenant,omitempty"`
	Namespace                    string                    `json:"namespace,omitempty"`
	Name                         string                    `json:"name,omitempty"`
	ClassName                    string                    `json:"className,omitempty"`
	SourceSubscriptionName       string                    `json:"sourceSubscriptionName,omitempty"`
	SourceSubscriptionPosition   string                    `json:"sourceSubscriptionPosition,omitempty"`
	Inputs                       []string                  `json:"inputs,omitempty"`
	TopicToSerdeClassName        map[string]string         `json:"topicToSerdeClassName,omitempty"`
	TopicsPattern                *string                   `json:"topicsPattern,omitempty"`
	TopicToSchemaType            map[string]string         `json:"topicToSchemaType,omitempty"`
	TopicToSchemaProperties      map[string]string         `json:"topicToSchemaProperties,omitempty"`
	InputSpecs                   map[string]ConsumerConfig `json:"inputSpecs,omitempty"`
	MaxMessageRetries            *int                      `json:"maxMessageRetries,omitempty"`
	DeadLetterTopic              string                    `json:"deadLetterTopic,omitempty"`
	Configs                      map[string]any            `json:"configs,omitempty"`
	Secrets                      map[string]any            `json:"secrets,omitempty"`
	Parallelism                  int                       `json:"parallelism,omitempty"`
	ProcessingGuarantees         string                    `json:"processingGuarantees,omitempty"`
	RetainOrdering               bool                      `json:"retainOrdering"`
	RetainKeyOrdering            bool                      `json:"retainKeyOrdering"`
	Resources                    *Resources                `json:"resources,omitempty"`
	AutoAck                      bool                      `json:"autoAck"`
	TimeoutMs                    *int64                    `json:"timeoutMs,omitempty"`
	NegativeAckRedeliveryDelayMs *int64                    `json:"negativeAckRedeliveryDelayMs,omitempty"`
	Archive                      string                    `json:"archive,omitempty"`
	CleanupSubscription          *bool                     `json:"cleanupSubscription,omitempty"` // unset: true (cleanup.go)
	RuntimeFlags                 string                    `json:"runtimeFlags,omitempty"`
	CustomRuntimeOptions         string                    `json:"customRuntimeOptions,omitempty"`
	TransformFunction            string                    `json:"transformFunction,omitempty"`
	TransformFunctionClassName   string                    `json:"transformFunctionClassName,omitempty"`
	TransformFunctionConfig      string                    `json:"transformFunctionConfig,omitempty"`
	LogTopic                     string                    `json:"logTopic,omitempty"`
	SinkType                     string                    `json:"sinkType,omitempty"` // pulsaradmin sends it; means archive builtin://<type>
}

// decodeStrict reads a JSON document into v, rejecting unknown fields.
func decodeStrict(field string, b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badField(field, "not a valid document: %v", err)
	}
	return nil
}

// connectorNames checks tenant, namespace and name against the path, as for functions.
func connectorNames(tenant, namespace, name *string, pt, pns, pn string) error {
	for _, f := range []struct {
		field, path string
		v           *string
	}{{"tenant", pt, tenant}, {"namespace", pns, namespace}, {"name", pn, name}} {
		if *f.v == "" {
			*f.v = f.path
		}
		if *f.v != f.path {
			return badField(f.field, "%q does not match the request path's %q", *f.v, f.path)
		}
		if !nameRE.MatchString(*f.v) {
			return badField(f.field, "%q is not a valid name (letters, digits, - = : . _)", *f.v)
		}
	}
	return nil
}

// archiveOf is the built-in a config names: archive builtin://x, or sourceType/sinkType x.
func archiveOf(archive, typ, field string) (string, error) {
	if archive == "" && typ != "" {
		archive = connector.BuiltinPrefix + typ
	}
	if archive == "" {
		return "", badField("archive", "missing: name a built-in connector (builtin://<name>, or --%s-type)", field)
	}
	if !strings.HasPrefix(archive, connector.BuiltinPrefix) {
		return "", badField("archive", "%q: only built-in connectors (builtin://<name>) run on Magnetar; Java connector archives (.nar) cannot", archive)
	}
	return archive, nil
}

func normGuarantee(g string, allowed ...string) (string, error) {
	if g == "" {
		return connector.AtLeastOnce, nil
	}
	for _, a := range allowed {
		if g == a {
			return g, nil
		}
	}
	return "", badField("processingGuarantees", "%q is not one of %s", g, strings.Join(allowed, ", "))
}

func (w *Worker) normalizeParallelism(p *int) error {
	if *p == 0 {
		*p = 1
	}
	if *p < 1 || *p > w.cfg.MaxParallelism {
		return badField("parallelism", "%d is not between 1 and %d (functionsMaxParallelism)", *p, w.cfg.MaxParallelism)
	}
	return nil
}

func defaultResources(r **Resources) error {
	if *r == nil {
		*r = &Resources{CPU: 1, RAM: 1 << 30, Disk: 10 << 30}
	}
	if (*r).CPU < 0 || (*r).RAM < 0 || (*r).Disk < 0 {
		return badField("resources", "cpu, ram and disk must not be negative")
	}
	return nil
}

// connectorError turns a connector's validation error into a 400.
func connectorError(err error) error {
	if err == nil {
		return nil
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		return err
	}
	if errors.Is(err, connector.ErrUnknownConnector) {
		return badField("archive", "%v", err)
	}
	if strings.HasPrefix(err.Error(), "processingGuarantees:") {
		return badField("processingGuarantees", "%s", strings.TrimSpace(strings.TrimPrefix(err.Error(), "processingGuarantees:")))
	}
	return badField("configs", "%s", strings.TrimPrefix(err.Error(), "configs: "))
}

// normalizeSource fills defaults and checks c for the path's tenant/namespace/name.
func (w *Worker) normalizeSource(c *SourceConfig, tenant, namespace, name string) error {
	if err := connectorNames(&c.Tenant, &c.Namespace, &c.Name, tenant, namespace, name); err != nil {
		return err
	}
	var err error
	if c.Archive, err = archiveOf(c.Archive, c.SourceType, "source"); err != nil {
		return err
	}
	c.SourceType = ""
	if c.ProcessingGuarantees, err = normGuarantee(c.ProcessingGuarantees, connector.AtLeastOnce, connector.AtMostOnce, connector.EffectivelyOnce); err != nil {
		return err
	}
	if err := w.normalizeParallelism(&c.Parallelism); err != nil {
		return err
	}
	if err := defaultResources(&c.Resources); err != nil {
		return err
	}
	if c.TopicName != "" {
		if err := checkTopic("topicName", c.TopicName); err != nil {
			return err
		}
	}
	d, err := w.connectors.Lookup(c.Archive)
	if err != nil {
		return connectorError(err)
	}
	if c.TopicName == "" && !d.SourceRoutes {
		return badField("topicName", "the %s source needs a destination topic (topicName, --destination-topic-name)", d.Name)
	}
	if d.SingleInstance && c.Parallelism > 1 {
		return badField("parallelism", "the %s source runs one instance (it reads one change stream in order)", d.Name)
	}
	return connectorError(connector.Validate(w.connectors, connector.KindSource, c.Archive, c.Configs, c.Secrets, c.ProcessingGuarantees))
}

// normalizeSink fills defaults and checks c.
func (w *Worker) normalizeSink(c *SinkConfig, tenant, namespace, name string) error {
	if err := connectorNames(&c.Tenant, &c.Namespace, &c.Name, tenant, namespace, name); err != nil {
		return err
	}
	var err error
	if c.Archive, err = archiveOf(c.Archive, c.SinkType, "sink"); err != nil {
		return err
	}
	c.SinkType = ""
	if c.ProcessingGuarantees, err = normGuarantee(c.ProcessingGuarantees, connector.AtLeastOnce, connector.AtMostOnce, connector.EffectivelyOnce); err != nil {
		return err
	}
	if err := w.normalizeParallelism(&c.Parallelism); err != nil {
		return err
	}
	if err := defaultResources(&c.Resources); err != nil {
		return err
	}
	if c.TransformFunction != "" {
		return badField("transformFunction", "sink transform functions are not supported")
	}
	if c.InputSpecs == nil {
		c.InputSpecs = map[string]ConsumerConfig{}
	}
	for _, t := range c.Inputs {
		if err := checkTopic("inputs", t); err != nil {
			return err
		}
		if _, ok := c.InputSpecs[t]; !ok {
			c.InputSpecs[t] = ConsumerConfig{}
		}
	}
	for t, s := range c.TopicToSchemaType {
		spec := c.InputSpecs[t]
		spec.SchemaType = s
		c.InputSpecs[t] = spec
	}
	for t, s := range c.TopicToSerdeClassName {
		spec := c.InputSpecs[t]
		spec.SerdeClassName = s
		c.InputSpecs[t] = spec
	}
	for t := range c.InputSpecs {
		if err := checkTopic("inputSpecs", t); err != nil {
			return err
		}
	}
	if c.TopicsPattern != nil && *c.TopicsPattern != "" {
		if len(c.InputSpecs) > 0 {
			return badField("topicsPattern", "set either inputs or topicsPattern, not both")
		}
		probe := FunctionConfig{TopicsPattern: c.TopicsPattern}
		if err := probe.normalizeInputs(); err != nil {
			return err
		}
	} else if len(c.InputSpecs) == 0 {
		return badField("inputs", "no input topics: set inputs, topicsPattern or inputSpecs")
	}
	switch c.SourceSubscriptionPosition {
	case "", "Latest", "Earliest":
	default:
		return badField("sourceSubscriptionPosition", "%q is not Latest or Earliest", c.SourceSubscriptionPosition)
	}
	if c.RetainOrdering && c.RetainKeyOrdering {
		return badField("retainKeyOrdering", "only one of retainOrdering and retainKeyOrdering may be set")
	}
	if c.ProcessingGuarantees == connector.EffectivelyOnce && c.RetainKeyOrdering {
		return badField("retainKeyOrdering", "EFFECTIVELY_ONCE reads each partition in order (Failover)")
	}
	if c.MaxMessageRetries != nil && *c.MaxMessageRetries < 0 {
		return badField("maxMessageRetries", "%d is negative", *c.MaxMessageRetries)
	}
	for field, v := range map[string]*int64{"timeoutMs": c.TimeoutMs, "negativeAckRedeliveryDelayMs": c.NegativeAckRedeliveryDelayMs} {
		if v != nil && *v < 0 {
			return badField(field, "%d is negative", *v)
		}
	}
	for field, t := range map[string]string{"deadLetterTopic": c.DeadLetterTopic, "logTopic": c.LogTopic} {
		if t != "" {
			if err := checkTopic(field, t); err != nil {
				return err
			}
		}
	}
	c.AutoAck = true
	if c.CleanupSubscription == nil {
		c.CleanupSubscription = boolPtr(true) // Pulsar's default
	}
	return connectorError(connector.Validate(w.connectors, connector.KindSink, c.Archive, c.Configs, c.Secrets, c.ProcessingGuarantees))
}

// inputList is every input topic of a sink, sorted.
func (c *SinkConfig) inputList() []string {
	out := make([]string, 0, len(c.InputSpecs))
	for t := range c.InputSpecs {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// functionConfigOf is the part of a connector's record the scheduler and the generic
// handlers read.
func functionConfigOf(tenant, namespace, name string, parallelism int, res *Resources, guarantee string) FunctionConfig {
	return FunctionConfig{Tenant: tenant, Namespace: namespace, Name: name, FQFN: tenant + "/" + namespace + "/" + name,
		Parallelism: parallelism, Resources: res, ProcessingGuarantees: guarantee, AutoAck: true}
}
