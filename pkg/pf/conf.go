package pf

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// Conf is the instance configuration the worker passes as -instance-conf: Pulsar's
// GoInstanceConfig, JSON names as a Pulsar worker writes them. Integers encode Pulsar's
// enums (ProcessingGuarantees, SubscriptionType, SubscriptionPosition).
type Conf struct {
	PulsarServiceURL       string `json:"pulsarServiceURL"`
	StateStorageServiceURL string `json:"stateStorageServiceUrl"`
	PulsarWebServiceURL    string `json:"pulsarWebServiceUrl"`
	InstanceID             int    `json:"instanceID"`
	FuncID                 string `json:"funcID"`
	FuncVersion            string `json:"funcVersion"`
	MaxBufTuples           int    `json:"maxBufTuples"`
	Port                   int    `json:"port"`
	ClusterName            string `json:"clusterName"`
	KillAfterIdleMs        int    `json:"killAfterIdleMs"`

	Tenant               string `json:"tenant"`
	NameSpace            string `json:"nameSpace"`
	Name                 string `json:"name"`
	ClassName            string `json:"className"`
	LogTopic             string `json:"logTopic"`
	ProcessingGuarantees int32  `json:"processingGuarantees"`
	SecretsMap           string `json:"secretsMap"`
	UserConfig           string `json:"userConfig"`
	Runtime              int32  `json:"runtime"`
	AutoACK              bool   `json:"autoAck"`
	Parallelism          int32  `json:"parallelism"`

	ClientAuthenticationPlugin     string `json:"clientAuthenticationPlugin"`
	ClientAuthenticationParameters string `json:"clientAuthenticationParameters"`
	TLSTrustCertsFilePath          string `json:"tlsTrustCertsFilePath"`
	TLSAllowInsecureConnection     bool   `json:"tlsAllowInsecureConnection"`
	TLSHostnameVerificationEnable  bool   `json:"tlsHostnameVerificationEnable"`

	SubscriptionType     int32  `json:"subscriptionType"`
	TimeoutMs            uint64 `json:"timeoutMs"`
	SubscriptionName     string `json:"subscriptionName"`
	CleanupSubscription  bool   `json:"cleanupSubscription"`
	SubscriptionPosition int32  `json:"subscriptionPosition"`

	// SourceInputSpecs maps each input topic (or pattern) to its ConsumerConfig as JSON.
	SourceInputSpecs           map[string]string `json:"sourceInputSpecs"`
	SourceSpecTopic            string            `json:"sourceSpecsTopic"`
	SourceSchemaType           string            `json:"sourceSchemaType"`
	IsRegexPatternSubscription bool              `json:"isRegexPatternSubscription"`
	ReceiverQueueSize          int32             `json:"receiverQueueSize"`

	SinkSpecTopic  string `json:"sinkSpecsTopic"`
	SinkSchemaType string `json:"sinkSchemaType"`

	CPU  float64 `json:"cpu"`
	RAM  int64   `json:"ram"`
	Disk int64   `json:"disk"`

	MaxMessageRetries           int32  `json:"maxMessageRetries"`
	DeadLetterTopic             string `json:"deadLetterTopic"`
	ExpectedHealthCheckInterval int32  `json:"expectedHealthCheckInterval"`
	MetricsPort                 int    `json:"metricsPort"`

	// Magnetar additions (a Pulsar worker leaves them zero).

	// WorkerID names the worker that runs the instance (status "workerId").
	WorkerID string `json:"workerId,omitempty"`
	// StateToken authenticates the instance to the worker's state service.
	StateToken string `json:"stateToken,omitempty"`
}

// Processing guarantees (Pulsar's ProcessingGuarantees enum).
const (
	AtLeastOnce     int32 = 0
	AtMostOnce      int32 = 1
	EffectivelyOnce int32 = 2
	Manual          int32 = 3
)

// Subscription types (Pulsar's SubscriptionType enum).
const (
	SubShared    int32 = 0
	SubFailover  int32 = 1
	SubKeyShared int32 = 2
)

// WindowConfigKey is the userConfig key that carries a windowed function's windowConfig
// (as Pulsar's worker puts it there).
const WindowConfigKey = "__WINDOWCONFIGS__"

// InputSpec is one input's consumer settings (Pulsar's ConsumerConfig JSON).
type InputSpec struct {
	SchemaType        string            `json:"schemaType,omitempty"`
	SerdeClassName    string            `json:"serdeClassName,omitempty"`
	RegexPattern      bool              `json:"regexPattern,omitempty"`
	ReceiverQueueSize int               `json:"receiverQueueSize,omitempty"`
	SchemaProperties  map[string]string `json:"schemaProperties,omitempty"`
}

// ParseConf reads -instance-conf (JSON) or -instance-conf-path (a JSON file) from args.
func ParseConf(args []string) (*Conf, error) {
	fs := flag.NewFlagSet("function", flag.ContinueOnError)
	content := fs.String("instance-conf", "", "the instance configuration as JSON")
	path := fs.String("instance-conf-path", "", "a file holding the instance configuration as JSON")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	raw := []byte(*content)
	if *path != "" {
		b, err := os.ReadFile(*path)
		if err != nil {
			return nil, fmt.Errorf("pf: -instance-conf-path: %w", err)
		}
		raw = b
	}
	if len(strings.TrimSpace(string(raw))) == 0 {
		return nil, errors.New("pf: neither -instance-conf nor -instance-conf-path given (this binary is a function: run it with `magnetar functions localrun --go`)")
	}
	c := &Conf{}
	if err := json.Unmarshal(raw, c); err != nil {
		return nil, fmt.Errorf("pf: -instance-conf: %w", err)
	}
	return c, c.Validate()
}

// Validate checks what an instance cannot run without.
func (c *Conf) Validate() error {
	var errs []error
	if c.PulsarServiceURL == "" {
		errs = append(errs, errors.New("pf: conf: pulsarServiceURL is empty"))
	}
	if c.Tenant == "" || c.NameSpace == "" || c.Name == "" {
		errs = append(errs, errors.New("pf: conf: tenant, nameSpace and name must be set"))
	}
	if len(c.inputs()) == 0 {
		errs = append(errs, errors.New("pf: conf: no input topic (sourceInputSpecs or sourceSpecsTopic)"))
	}
	if c.ProcessingGuarantees < AtLeastOnce || c.ProcessingGuarantees > Manual {
		errs = append(errs, fmt.Errorf("pf: conf: processingGuarantees %d is not one of 0..3", c.ProcessingGuarantees))
	}
	return errors.Join(errs...)
}

// FQFN is tenant/namespace/name.
func (c *Conf) FQFN() string { return c.Tenant + "/" + c.NameSpace + "/" + c.Name }

// input is one resolved input.
type input struct {
	topic string
	spec  InputSpec
}

// inputs lists the inputs, from sourceInputSpecs or the deprecated single-topic fields,
// sorted so every instance opens them in one order.
func (c *Conf) inputs() []input {
	var in []input
	for topic, raw := range c.SourceInputSpecs {
		var s InputSpec
		if raw != "" {
			_ = json.Unmarshal([]byte(raw), &s) // a bad spec is the worker's bug; defaults do
		}
		in = append(in, input{topic: topic, spec: s})
	}
	if len(in) == 0 && c.SourceSpecTopic != "" {
		in = append(in, input{topic: c.SourceSpecTopic, spec: InputSpec{
			SchemaType: c.SourceSchemaType, RegexPattern: c.IsRegexPatternSubscription, ReceiverQueueSize: int(c.ReceiverQueueSize),
		}})
	}
	for i := 1; i < len(in); i++ {
		for j := i; j > 0 && in[j].topic < in[j-1].topic; j-- {
			in[j], in[j-1] = in[j-1], in[j]
		}
	}
	return in
}

// subscription is the subscription name: subscriptionName, or the FQFN as Pulsar uses.
func (c *Conf) subscription() string {
	if c.SubscriptionName != "" {
		return c.SubscriptionName
	}
	return c.FQFN()
}

// userConfigMap decodes userConfig (JSON object) without the window key.
func (c *Conf) userConfigMap() (map[string]any, *WindowConfig, error) {
	m := map[string]any{}
	if strings.TrimSpace(c.UserConfig) != "" {
		if err := json.Unmarshal([]byte(c.UserConfig), &m); err != nil {
			return nil, nil, fmt.Errorf("pf: conf: userConfig is not a JSON object: %w", err)
		}
	}
	var wc *WindowConfig
	if raw, ok := m[WindowConfigKey]; ok {
		b, _ := json.Marshal(raw)
		wc = &WindowConfig{}
		if s, isStr := raw.(string); isStr {
			b = []byte(s)
		}
		if err := json.Unmarshal(b, wc); err != nil {
			return nil, nil, fmt.Errorf("pf: conf: userConfig.%s: %w", WindowConfigKey, err)
		}
		delete(m, WindowConfigKey)
	}
	return m, wc, nil
}

// WindowConfig is Pulsar's windowConfig (JSON names of FunctionConfig.windowConfig).
type WindowConfig struct {
	WindowLengthCount             *int    `json:"windowLengthCount,omitempty"`
	WindowLengthDurationMs        *int64  `json:"windowLengthDurationMs,omitempty"`
	SlidingIntervalCount          *int    `json:"slidingIntervalCount,omitempty"`
	SlidingIntervalDurationMs     *int64  `json:"slidingIntervalDurationMs,omitempty"`
	LateDataTopic                 *string `json:"lateDataTopic,omitempty"`
	MaxLagMs                      *int64  `json:"maxLagMs,omitempty"`
	WatermarkEmitIntervalMs       *int64  `json:"watermarkEmitIntervalMs,omitempty"`
	TimestampExtractorClassName   *string `json:"timestampExtractorClassName,omitempty"`
	ActualWindowFunctionClassName *string `json:"actualWindowFunctionClassName,omitempty"`
	ProcessingGuarantees          *string `json:"processingGuarantees,omitempty"`
}
