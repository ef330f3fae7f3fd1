package pf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/apache/pulsar-client-go/pulsar"
)

// FunctionContext is what a handler can ask of its instance (Pulsar's function Context).
type FunctionContext struct {
	inst   *Instance
	conf   *Conf
	user   map[string]any
	record *Record

	mu      sync.Mutex
	metrics map[string]float64
}

type ctxKey struct{}

// FromContext returns the FunctionContext of the invocation ctx belongs to.
func FromContext(ctx context.Context) (*FunctionContext, bool) {
	fc, ok := ctx.Value(ctxKey{}).(*FunctionContext)
	return fc, ok
}

// InstanceID is this instance's index, 0..parallelism-1.
func (fc *FunctionContext) InstanceID() int { return fc.conf.InstanceID }

// NumInstances is the function's parallelism.
func (fc *FunctionContext) NumInstances() int { return int(fc.conf.Parallelism) }

// FunctionName, FunctionTenant, FunctionNamespace, FunctionID and FunctionVersion describe
// the function.
func (fc *FunctionContext) FunctionName() string      { return fc.conf.Name }
func (fc *FunctionContext) FunctionTenant() string    { return fc.conf.Tenant }
func (fc *FunctionContext) FunctionNamespace() string { return fc.conf.NameSpace }
func (fc *FunctionContext) FunctionID() string        { return fc.conf.FuncID }
func (fc *FunctionContext) FunctionVersion() string   { return fc.conf.FuncVersion }

// InputTopics lists the inputs; OutputTopic is the output ("" when none).
func (fc *FunctionContext) InputTopics() []string {
	var t []string
	for _, in := range fc.conf.inputs() {
		t = append(t, in.topic)
	}
	return t
}
func (fc *FunctionContext) OutputTopic() string { return fc.conf.SinkSpecTopic }

// CurrentRecord is the record being processed (nil in a windowed function).
func (fc *FunctionContext) CurrentRecord() *Record { return fc.record }

// UserConfig is the function's userConfig; UserConfigValue one key of it.
func (fc *FunctionContext) UserConfig() map[string]any { return fc.user }
func (fc *FunctionContext) UserConfigValue(key string) (any, bool) {
	v, ok := fc.user[key]
	return v, ok
}

// ErrNoSecret is returned by Secret for a name the function has no secret for.
var ErrNoSecret = errors.New("pf: no such secret")

// Secret resolves one of the function's secrets. The secrets map's value says where it is:
// {"env": "VAR"} or a plain string names an environment variable of the instance; {"path":
// "/file"} (optionally with "key" for a JSON object file) a file.
func (fc *FunctionContext) Secret(name string) (string, error) {
	return resolveSecret(fc.conf.SecretsMap, name)
}

func resolveSecret(secretsMap, name string) (string, error) {
	m := map[string]any{}
	if strings.TrimSpace(secretsMap) != "" {
		if err := json.Unmarshal([]byte(secretsMap), &m); err != nil {
			return "", fmt.Errorf("pf: secretsMap is not a JSON object: %w", err)
		}
	}
	v, ok := m[name]
	if !ok {
		return "", fmt.Errorf("%w %q", ErrNoSecret, name)
	}
	env := func(k string) (string, error) {
		s, ok := os.LookupEnv(k)
		if !ok {
			return "", fmt.Errorf("%w %q: environment variable %s is not set", ErrNoSecret, name, k)
		}
		return s, nil
	}
	switch v := v.(type) {
	case string:
		return env(v)
	case map[string]any:
		if e, ok := v["env"].(string); ok {
			return env(e)
		}
		if p, ok := v["path"].(string); ok {
			b, err := os.ReadFile(p)
			if err != nil {
				return "", fmt.Errorf("pf: secret %q: %w", name, err)
			}
			if k, ok := v["key"].(string); ok {
				obj := map[string]any{}
				if err := json.Unmarshal(b, &obj); err != nil {
					return "", fmt.Errorf("pf: secret %q: %s is not a JSON object: %w", name, p, err)
				}
				s, ok := obj[k].(string)
				if !ok {
					return "", fmt.Errorf("%w %q: key %q not in %s", ErrNoSecret, name, k, p)
				}
				return s, nil
			}
			return strings.TrimRight(string(b), "\r\n"), nil
		}
	}
	return "", fmt.Errorf("pf: secret %q: want a string (environment variable) or {\"env\"|\"path\": ...}", name)
}

// RecordMetric sets a user metric (reported in the instance's stats as userMetrics).
func (fc *FunctionContext) RecordMetric(name string, value float64) {
	fc.inst.recordUserMetric(name, value)
}

// Publish sends payload to topic (any topic, not only the output), waiting for the receipt.
func (fc *FunctionContext) Publish(ctx context.Context, topic string, payload []byte) error {
	p, err := fc.inst.extraProducer(topic)
	if err != nil {
		return err
	}
	_, err = p.Send(ctx, &pulsar.ProducerMessage{Payload: payload})
	return err
}

// Ack acknowledges the current record (processingGuarantees MANUAL, or autoAck false).
func (fc *FunctionContext) Ack() error {
	if fc.record == nil || fc.record.consumer == nil {
		return errors.New("pf: no current record to acknowledge")
	}
	return fc.record.consumer.Ack(fc.record.msg)
}

// Logger logs to the instance's stderr and, when the function has a logTopic, to it.
func (fc *FunctionContext) Logger() *slog.Logger { return fc.inst.userLog }

// PutState stores value under key in the function's state (shared by its instances).
func (fc *FunctionContext) PutState(ctx context.Context, key string, value []byte) error {
	return fc.inst.state.put(ctx, key, value)
}

// GetState reads key (ErrNoState if it was never written).
func (fc *FunctionContext) GetState(ctx context.Context, key string) ([]byte, error) {
	return fc.inst.state.get(ctx, key)
}

// DeleteState removes key.
func (fc *FunctionContext) DeleteState(ctx context.Context, key string) error {
	return fc.inst.state.del(ctx, key)
}

// IncrCounter adds by to the counter key and returns its new value.
func (fc *FunctionContext) IncrCounter(ctx context.Context, key string, by int64) (int64, error) {
	return fc.inst.state.incr(ctx, key, by)
}

// GetCounter reads the counter key.
func (fc *FunctionContext) GetCounter(ctx context.Context, key string) (int64, error) {
	return fc.inst.state.counter(ctx, key)
}
