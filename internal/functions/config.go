package functions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/magnetar-io/magnetar/pkg/pf"
)

// FunctionConfig is a function's configuration as the admin API takes and returns it:
// Pulsar's FunctionConfig JSON field names (pulsaradmin's utils.FunctionConfig). Fields we
// keep but do not act on (Java serde classes, crypto) are stored and returned unchanged.
type FunctionConfig struct {
	Tenant    string `json:"tenant,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	ClassName string `json:"className,omitempty"`

	Inputs             []string                  `json:"inputs,omitempty"`
	CustomSerdeInputs  map[string]string         `json:"customSerdeInputs,omitempty"`
	TopicsPattern      *string                   `json:"topicsPattern,omitempty"`
	CustomSchemaInputs map[string]string         `json:"customSchemaInputs,omitempty"`
	InputSpecs         map[string]ConsumerConfig `json:"inputSpecs,omitempty"`
	InputTypeClassName string                    `json:"inputTypeClassName,omitempty"`

	Output                       string            `json:"output,omitempty"`
	ProducerConfig               *json.RawMessage  `json:"producerConfig,omitempty"`
	CustomSchemaOutputs          map[string]string `json:"customSchemaOutputs,omitempty"`
	OutputSchemaType             string            `json:"outputSchemaType,omitempty"`
	OutputSerdeClassName         string            `json:"outputSerdeClassName,omitempty"`
	OutputTypeClassName          string            `json:"outputTypeClassName,omitempty"`
	ForwardSourceMessageProperty bool              `json:"forwardSourceMessageProperty"`
	BatchBuilder                 string            `json:"batchBuilder,omitempty"`

	LogTopic             string           `json:"logTopic,omitempty"`
	ProcessingGuarantees string           `json:"processingGuarantees,omitempty"`
	RetainOrdering       bool             `json:"retainOrdering"`
	RetainKeyOrdering    bool             `json:"retainKeyOrdering"`
	UserConfig           map[string]any   `json:"userConfig,omitempty"`
	Secrets              map[string]any   `json:"secrets,omitempty"`
	Runtime              string           `json:"runtime,omitempty"`
	AutoAck              bool             `json:"autoAck"`
	MaxMessageRetries    *int             `json:"maxMessageRetries,omitempty"`
	DeadLetterTopic      string           `json:"deadLetterTopic,omitempty"`
	SubName              string           `json:"subName,omitempty"`
	SubscriptionPosition string           `json:"subscriptionPosition,omitempty"`
	CleanupSubscription  *bool            `json:"cleanupSubscription,omitempty"` // unset: true (cleanup.go)
	SkipToLatest         bool             `json:"skipToLatest"`
	Parallelism          int              `json:"parallelism,omitempty"`
	Resources            *Resources       `json:"resources,omitempty"`
	FQFN                 string           `json:"fqfn,omitempty"`
	WindowConfig         *pf.WindowConfig `json:"windowConfig,omitempty"`
	TimeoutMs            *int64           `json:"timeoutMs,omitempty"`

	Jar  *string `json:"jar,omitempty"`
	Py   *string `json:"py,omitempty"`
	Go   *string `json:"go,omitempty"`
	Wasm *string `json:"wasm,omitempty"` // ours: a WebAssembly module

	FunctionType                   *string `json:"functionType,omitempty"`
	RuntimeFlags                   string  `json:"runtimeFlags,omitempty"`
	CustomRuntimeOptions           string  `json:"customRuntimeOptions,omitempty"`
	MaxPendingAsyncRequests        int     `json:"maxPendingAsyncRequests,omitempty"`
	ExposePulsarAdminClientEnabled bool    `json:"exposePulsarAdminClientEnabled"`
}

// ConsumerConfig is one input's settings (Pulsar's ConsumerConfig).
type ConsumerConfig struct {
	SchemaType         string            `json:"schemaType,omitempty"`
	SerdeClassName     string            `json:"serdeClassName,omitempty"`
	RegexPattern       bool              `json:"regexPattern,omitempty"`
	ReceiverQueueSize  int               `json:"receiverQueueSize,omitempty"`
	SchemaProperties   map[string]string `json:"schemaProperties,omitempty"`
	ConsumerProperties map[string]string `json:"consumerProperties,omitempty"`
	CryptoConfig       *json.RawMessage  `json:"cryptoConfig,omitempty"`
	PoolMessages       bool              `json:"poolMessages,omitempty"`
}

// Resources are what one instance may use (Pulsar's defaults: 1 CPU, 1 GiB RAM, 10 GiB disk).
type Resources struct {
	CPU  float64 `json:"cpu"`
	RAM  int64   `json:"ram"`
	Disk int64   `json:"disk"`
}

// Runtimes (FunctionConfig.runtime).
const (
	RuntimeGo     = "GO"
	RuntimePython = "PYTHON"
	RuntimeWasm   = "WASM" // ours
	RuntimeJava   = "JAVA"
)

// ComponentType is what an instance is (Pulsar's FunctionDetails.ComponentType): the worker
// runs functions now; sources and sinks (issue 21) are instances of the same worker with
// another type.
type ComponentType string

// Component types.
const (
	ComponentFunction ComponentType = "FUNCTION"
	ComponentSource   ComponentType = "SOURCE"
	ComponentSink     ComponentType = "SINK"
)

var guarantees = map[string]int32{
	"ATLEAST_ONCE": pf.AtLeastOnce, "ATMOST_ONCE": pf.AtMostOnce, "EFFECTIVELY_ONCE": pf.EffectivelyOnce, "MANUAL": pf.Manual,
}

// nameRE is what tenant, namespace and function names may be (Pulsar's NamedEntity rule).
var nameRE = regexp.MustCompile(`^[-=:.\w]+$`)

// fieldError is a bad value in a function configuration: a 400 naming the field.
type fieldError struct {
	field, reason string
}

func (e *fieldError) Error() string { return fmt.Sprintf("%s: %s", e.field, e.reason) }

func badField(field, format string, args ...any) error {
	return &fieldError{field: field, reason: fmt.Sprintf(format, args...)}
}

// decodeConfig reads a functionConfig JSON document, rejecting unknown fields so a typo is a
// 400 naming it rather than a setting silently ignored.
func decodeConfig(b []byte) (*FunctionConfig, error) {
	c := &FunctionConfig{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, badField("functionConfig", "not a valid FunctionConfig JSON document: %v", err)
	}
	return c, nil
}

// limits are the worker's bounds a configuration is checked against.
type limits struct {
	maxParallelism int
}

// normalize fills defaults and checks c, for tenant/namespace/name taken from the path.
// Every error is a fieldError.
func (c *FunctionConfig) normalize(tenant, namespace, name string, lim limits) error {
	for _, f := range []struct {
		field, path string
		v           *string
	}{
		{"tenant", tenant, &c.Tenant}, {"namespace", namespace, &c.Namespace}, {"name", name, &c.Name},
	} {
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
	c.FQFN = c.Tenant + "/" + c.Namespace + "/" + c.Name
	if c.ProcessingGuarantees == "" {
		c.ProcessingGuarantees = "ATLEAST_ONCE"
	}
	if _, ok := guarantees[c.ProcessingGuarantees]; !ok {
		return badField("processingGuarantees", "%q is not one of ATLEAST_ONCE, ATMOST_ONCE, EFFECTIVELY_ONCE, MANUAL", c.ProcessingGuarantees)
	}
	c.AutoAck = c.ProcessingGuarantees != "MANUAL"
	if c.CleanupSubscription == nil {
		c.CleanupSubscription = boolPtr(true) // Pulsar's default
	}
	if c.Parallelism == 0 {
		c.Parallelism = 1
	}
	if c.Parallelism < 1 || c.Parallelism > lim.maxParallelism {
		return badField("parallelism", "%d is not between 1 and %d (functionsMaxParallelism)", c.Parallelism, lim.maxParallelism)
	}
	if c.Resources == nil {
		c.Resources = &Resources{CPU: 1, RAM: 1 << 30, Disk: 10 << 30}
	}
	if c.Resources.CPU < 0 || c.Resources.RAM < 0 || c.Resources.Disk < 0 {
		return badField("resources", "cpu, ram and disk must not be negative")
	}
	if err := c.normalizeInputs(); err != nil {
		return err
	}
	if c.Output != "" {
		if err := checkTopic("output", c.Output); err != nil {
			return err
		}
		for _, in := range c.inputTopics() {
			if normTopic(in) == normTopic(c.Output) {
				return badField("output", "topic %s is also an input", c.Output)
			}
		}
	}
	for field, t := range map[string]string{"logTopic": c.LogTopic, "deadLetterTopic": c.DeadLetterTopic} {
		if t != "" {
			if err := checkTopic(field, t); err != nil {
				return err
			}
		}
	}
	if c.RetainOrdering && c.RetainKeyOrdering {
		return badField("retainKeyOrdering", "only one of retainOrdering and retainKeyOrdering may be set")
	}
	if c.ProcessingGuarantees == "EFFECTIVELY_ONCE" && c.RetainKeyOrdering {
		return badField("retainKeyOrdering", "EFFECTIVELY_ONCE reads each partition in order (Failover); Key_Shared cannot keep its sequence ids growing")
	}
	if c.MaxMessageRetries != nil && *c.MaxMessageRetries < 0 {
		return badField("maxMessageRetries", "%d is negative", *c.MaxMessageRetries)
	}
	if c.DeadLetterTopic != "" && (c.MaxMessageRetries == nil || *c.MaxMessageRetries == 0) {
		return badField("deadLetterTopic", "set, but maxMessageRetries is not: messages would never reach it")
	}
	if c.TimeoutMs != nil && *c.TimeoutMs < 0 {
		return badField("timeoutMs", "%d is negative", *c.TimeoutMs)
	}
	switch c.SubscriptionPosition {
	case "", "Latest", "Earliest":
	default:
		return badField("subscriptionPosition", "%q is not Latest or Earliest", c.SubscriptionPosition)
	}
	if c.WindowConfig != nil {
		if c.ProcessingGuarantees == "EFFECTIVELY_ONCE" {
			return badField("windowConfig", "windowed functions do not support EFFECTIVELY_ONCE")
		}
		if err := pf.ValidateWindowConfig(c.WindowConfig); err != nil {
			return badField("windowConfig", "%v", strings.TrimPrefix(err.Error(), "window: windowConfig: "))
		}
	}
	if _, ok := c.UserConfig[pf.WindowConfigKey]; ok {
		return badField("userConfig", "key %s is reserved for windowConfig", pf.WindowConfigKey)
	}
	for k, v := range c.Secrets {
		switch v.(type) {
		case string, map[string]any:
		default:
			return badField("secrets", "secret %q: want an environment variable name or {\"env\"|\"path\": ...}", k)
		}
	}
	return c.normalizeRuntime()
}

func (c *FunctionConfig) normalizeInputs() error {
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
	for t, schema := range c.CustomSchemaInputs {
		spec := c.InputSpecs[t]
		spec.SchemaType = schema
		c.InputSpecs[t] = spec
	}
	for t, serde := range c.CustomSerdeInputs {
		spec := c.InputSpecs[t]
		spec.SerdeClassName = serde
		c.InputSpecs[t] = spec
	}
	if c.TopicsPattern != nil && *c.TopicsPattern != "" {
		if _, err := regexp.Compile(strings.TrimPrefix(*c.TopicsPattern, "persistent://")); err != nil {
			return badField("topicsPattern", "%q is not a regular expression: %v", *c.TopicsPattern, err)
		}
		spec := c.InputSpecs[*c.TopicsPattern]
		spec.RegexPattern = true
		c.InputSpecs[*c.TopicsPattern] = spec
	}
	for t, spec := range c.InputSpecs {
		if !spec.RegexPattern {
			if err := checkTopic("inputSpecs", t); err != nil {
				return err
			}
		}
		if spec.ReceiverQueueSize < 0 {
			return badField("inputSpecs", "%s: receiverQueueSize %d is negative", t, spec.ReceiverQueueSize)
		}
	}
	if len(c.InputSpecs) == 0 {
		return badField("inputs", "no input topics: set inputs, topicsPattern or inputSpecs")
	}
	return nil
}

// inputTopics lists every input (including patterns).
func (c *FunctionConfig) inputTopics() []string {
	var t []string
	for k := range c.InputSpecs {
		t = append(t, k)
	}
	return t
}

func (c *FunctionConfig) normalizeRuntime() error {
	set := 0
	for _, p := range []*string{c.Py, c.Go, c.Wasm, c.Jar} {
		if p != nil && *p != "" {
			set++
		}
	}
	if set > 1 {
		return badField("runtime", "only one of py, go, wasm and jar may be set")
	}
	if c.Runtime == "" {
		switch {
		case c.Py != nil && *c.Py != "":
			c.Runtime = RuntimePython
		case c.Go != nil && *c.Go != "":
			c.Runtime = RuntimeGo
		case c.Wasm != nil && *c.Wasm != "":
			c.Runtime = RuntimeWasm
		case c.Jar != nil && *c.Jar != "":
			c.Runtime = RuntimeJava
		}
	}
	c.Runtime = strings.ToUpper(c.Runtime)
	switch c.Runtime {
	case RuntimeGo, RuntimePython, RuntimeWasm, "":
	case RuntimeJava:
		return badField("runtime", "JAVA functions are not supported: submit a Go binary (go), a Python file or wheel (py) or a WebAssembly module (wasm)")
	default:
		return badField("runtime", "%q is not GO, PYTHON or WASM", c.Runtime)
	}
	if c.Runtime == RuntimePython && c.ClassName == "" {
		return badField("className", "a Python function needs className (module.Class or module.function)")
	}
	return nil
}

// checkTopic checks a topic name: short (topic), tenant/ns/topic or domain://tenant/ns/topic.
func checkTopic(field, t string) error {
	rest := t
	if i := strings.Index(t, "://"); i >= 0 {
		dom := t[:i]
		if dom != "persistent" && dom != "non-persistent" {
			return badField(field, "topic %q: domain %q is not persistent or non-persistent", t, dom)
		}
		rest = t[i+3:]
	}
	parts := strings.Split(rest, "/")
	if (len(parts) != 1 && len(parts) != 3) || (len(parts) == 1 && strings.Contains(t, "://")) {
		return badField(field, "topic %q is not [persistent://]tenant/namespace/topic or a short name", t)
	}
	for _, p := range parts {
		if p == "" {
			return badField(field, "topic %q has an empty part", t)
		}
	}
	return nil
}

// normTopic is the full name of a topic (short names live in public/default).
func normTopic(t string) string {
	if !strings.Contains(t, "://") {
		if !strings.Contains(t, "/") {
			t = "public/default/" + t
		}
		t = "persistent://" + t
	}
	return t
}

func boolPtr(b bool) *bool { return &b }
