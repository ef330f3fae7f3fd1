package topics

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// Errors of the dynamic configuration. The admin API answers them 412 (as Pulsar does for a
// key that is not dynamic) and 400 (admin/errors.go).
var (
	ErrNotDynamic      = errors.New("topics: not a dynamic configuration key")
	ErrBadDynamicValue = errors.New("topics: bad value for a dynamic configuration key")
)

// dynamicConfig holds the settings that change at run time. The hot paths read them with
// one atomic load each; the BrokerConfig fields they start from are never written after New.
type dynamicConfig struct {
	readBatch       atomic.Int64 // dispatcherMaxReadBatchSize
	unackedConsumer atomic.Int64 // maxUnackedMessagesPerConsumer
	unackedSub      atomic.Int64 // maxUnackedMessagesPerSubscription
	topicLevel      atomic.Bool  // exposeTopicLevelMetricsInPrometheus
	autoSub         atomic.Bool  // allowAutoSubscriptionCreation
	// The admin API reads these two (admin/nsdelete.go); they live here because this is the
	// one dynamic configuration of a broker.
	forceDeleteNamespace atomic.Bool // forceDeleteNamespaceAllowed
	forceDeleteTenant    atomic.Bool // forceDeleteTenantAllowed

	// overrides are the stored values as given (Values answers them as Pulsar answers its
	// stored map: a value the parser reads loosely comes back as it was written).
	overridesMu sync.Mutex
	overrides   map[string]string
}

func newDynamicConfig(cfg *config.BrokerConfig) *dynamicConfig {
	d := &dynamicConfig{}
	d.readBatch.Store(int64(cfg.DispatcherMaxReadBatchSize))
	d.unackedConsumer.Store(int64(cfg.MaxUnackedMessagesPerConsumer))
	d.unackedSub.Store(int64(cfg.MaxUnackedMessagesPerSubscription))
	d.topicLevel.Store(cfg.ExposeTopicLevelMetricsInPrometheus)
	d.autoSub.Store(cfg.AllowAutoSubscriptionCreation)
	d.forceDeleteNamespace.Store(cfg.ForceDeleteNamespaceAllowed)
	d.forceDeleteTenant.Store(cfg.ForceDeleteTenantAllowed)
	return d
}

// setOverride records (or, with ok false, forgets) the stored value of name.
func (d *dynamicConfig) setOverride(name, value string, ok bool) {
	d.overridesMu.Lock()
	defer d.overridesMu.Unlock()
	if d.overrides == nil {
		d.overrides = map[string]string{}
	}
	if ok {
		d.overrides[name] = value
	} else {
		delete(d.overrides, name)
	}
}

func (d *dynamicConfig) maxReadBatch() int       { return int(d.readBatch.Load()) }
func (d *dynamicConfig) maxUnackedConsumer() int { return int(d.unackedConsumer.Load()) }
func (d *dynamicConfig) maxUnackedSub() int      { return int(d.unackedSub.Load()) }

// dynamicKey is one runtime-tunable key: how to read it and how to parse, check and apply a
// new value (with the same bounds BrokerConfig.Validate applies at start).
type dynamicKey struct {
	get   func(d *dynamicConfig) string
	parse func(v string) (func(d *dynamicConfig), error)
}

func intKey(name string, lo, hi int64, field func(d *dynamicConfig) *atomic.Int64) dynamicKey {
	return dynamicKey{
		get: func(d *dynamicConfig) string { return strconv.FormatInt(field(d).Load(), 10) },
		parse: func(v string) (func(d *dynamicConfig), error) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < lo || n > hi {
				return nil, fmt.Errorf("%w: %s=%q (an integer in [%d, %d])", ErrBadDynamicValue, name, v, lo, hi)
			}
			return func(d *dynamicConfig) { field(d).Store(n) }, nil
		},
	}
}

// looseBoolKey reads a value as Pulsar's FieldParser reads a boolean (Boolean.valueOf):
// "true" in any case is true, anything else false, so any value is accepted, as Pulsar
// accepts it.
func looseBoolKey(field func(d *dynamicConfig) *atomic.Bool) dynamicKey {
	return dynamicKey{
		get: func(d *dynamicConfig) string { return strconv.FormatBool(field(d).Load()) },
		parse: func(v string) (func(d *dynamicConfig), error) {
			b := strings.EqualFold(v, "true")
			return func(d *dynamicConfig) { field(d).Store(b) }, nil
		},
	}
}

// dynamicKeys are the keys `/admin/v2/brokers/configuration` lists, by Pulsar name.
var dynamicKeys = map[string]dynamicKey{
	"dispatcherMaxReadBatchSize": intKey("dispatcherMaxReadBatchSize", 1, 10000,
		func(d *dynamicConfig) *atomic.Int64 { return &d.readBatch }),
	"maxUnackedMessagesPerConsumer": intKey("maxUnackedMessagesPerConsumer", 0, 1<<31-1,
		func(d *dynamicConfig) *atomic.Int64 { return &d.unackedConsumer }),
	"maxUnackedMessagesPerSubscription": intKey("maxUnackedMessagesPerSubscription", 0, 1<<31-1,
		func(d *dynamicConfig) *atomic.Int64 { return &d.unackedSub }),
	"allowAutoSubscriptionCreation": looseBoolKey(func(d *dynamicConfig) *atomic.Bool { return &d.autoSub }),
	"forceDeleteNamespaceAllowed":   looseBoolKey(func(d *dynamicConfig) *atomic.Bool { return &d.forceDeleteNamespace }),
	"forceDeleteTenantAllowed":      looseBoolKey(func(d *dynamicConfig) *atomic.Bool { return &d.forceDeleteTenant }),
	"exposeTopicLevelMetricsInPrometheus": {
		get: func(d *dynamicConfig) string { return strconv.FormatBool(d.topicLevel.Load()) },
		parse: func(v string) (func(d *dynamicConfig), error) {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("%w: exposeTopicLevelMetricsInPrometheus=%q (true or false)", ErrBadDynamicValue, v)
			}
			return func(d *dynamicConfig) { d.topicLevel.Store(b) }, nil
		},
	},
}

// DynamicConfig is the admin API's view of the runtime-tunable settings.
type DynamicConfig struct{ s *Service }

// DynamicConfig returns the handle the admin API uses for /admin/v2/brokers/configuration.
func (s *Service) DynamicConfig() DynamicConfig { return DynamicConfig{s} }

// Names lists the dynamic keys, sorted.
func (c DynamicConfig) Names() []string {
	out := make([]string, 0, len(dynamicKeys))
	for k := range dynamicKeys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Values is every dynamic key's current value on this broker; an overridden one as it was
// stored.
func (c DynamicConfig) Values() map[string]string {
	out := make(map[string]string, len(dynamicKeys))
	for k, dk := range dynamicKeys {
		out[k] = dk.get(c.s.dyn)
	}
	c.s.dyn.overridesMu.Lock()
	for k, v := range c.s.dyn.overrides {
		out[k] = v
	}
	c.s.dyn.overridesMu.Unlock()
	return out
}

// TopicLevelMetrics reports exposeTopicLevelMetricsInPrometheus.
func (c DynamicConfig) TopicLevelMetrics() bool { return c.s.dyn.topicLevel.Load() }

// ForceDeleteNamespaceAllowed reports forceDeleteNamespaceAllowed.
func (c DynamicConfig) ForceDeleteNamespaceAllowed() bool { return c.s.dyn.forceDeleteNamespace.Load() }

// ForceDeleteTenantAllowed reports forceDeleteTenantAllowed.
func (c DynamicConfig) ForceDeleteTenantAllowed() bool { return c.s.dyn.forceDeleteTenant.Load() }

// Set checks name=value, stores it in the metadata store (so every broker, and this one
// after a restart, applies it) and applies it here at once. A key that is not dynamic is
// ErrNotDynamic, a bad value ErrBadDynamicValue; nothing is stored then.
func (c DynamicConfig) Set(ctx context.Context, name, value string) error {
	dk, ok := dynamicKeys[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotDynamic, name)
	}
	apply, err := dk.parse(value)
	if err != nil {
		return err
	}
	if err := c.update(ctx, func(m map[string]string) { m[name] = value }); err != nil {
		return err
	}
	apply(c.s.dyn)
	c.s.dyn.setOverride(name, value, true)
	c.s.log.Info("dynamic configuration changed", "key", name, "value", value)
	return nil
}

// Delete removes the override of name from the metadata store and goes back to the value
// this broker started with.
func (c DynamicConfig) Delete(ctx context.Context, name string) error {
	dk, ok := dynamicKeys[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotDynamic, name)
	}
	if err := c.update(ctx, func(m map[string]string) { delete(m, name) }); err != nil {
		return err
	}
	// Only this key goes back; the other overrides stay as they are.
	if apply, err := dk.parse(dk.get(newDynamicConfig(&c.s.cfg))); err == nil {
		apply(c.s.dyn)
	}
	c.s.dyn.setOverride(name, "", false)
	c.s.log.Info("dynamic configuration override removed", "key", name)
	return nil
}

// update applies change to the stored overrides (resources.UpdateDynamicConfig).
func (c DynamicConfig) update(ctx context.Context, change func(map[string]string)) error {
	replaced, err := c.s.res.UpdateDynamicConfig(ctx, change)
	if replaced {
		c.s.log.Warn("replaced an unreadable dynamic configuration record")
	}
	if err != nil {
		return fmt.Errorf("topics: dynamic configuration: %w", err)
	}
	return nil
}

// applyDynamic sets every dynamic key from the start configuration, then from the stored
// overrides m (a value this version cannot parse is logged and skipped).
func (s *Service) applyDynamic(m map[string]string) {
	base := newDynamicConfig(&s.cfg)
	overrides := map[string]string{}
	for k, v := range m {
		dk, ok := dynamicKeys[k]
		if !ok {
			s.log.Warn("ignoring an unknown dynamic configuration key", "key", k)
			continue
		}
		apply, err := dk.parse(v)
		if err != nil {
			s.log.Warn("ignoring a bad dynamic configuration value", "err", err)
			continue
		}
		apply(base)
		overrides[k] = v
	}
	s.dyn.overridesMu.Lock()
	s.dyn.overrides = overrides
	s.dyn.overridesMu.Unlock()
	s.dyn.autoSub.Store(base.autoSub.Load())
	s.dyn.readBatch.Store(base.readBatch.Load())
	s.dyn.unackedConsumer.Store(base.unackedConsumer.Load())
	s.dyn.unackedSub.Store(base.unackedSub.Load())
	s.dyn.topicLevel.Store(base.topicLevel.Load())
	s.dyn.forceDeleteNamespace.Store(base.forceDeleteNamespace.Load())
	s.dyn.forceDeleteTenant.Store(base.forceDeleteTenant.Load())
}

// watchDynamic applies the stored overrides now and on every change until ctx ends; a
// broken watch is re-established after a pause.
func (s *Service) watchDynamic(ctx context.Context) {
	for ctx.Err() == nil {
		ch, err := s.store.Watch(ctx, resources.DynamicConfigKey, false)
		if err == nil {
			for ev := range ch {
				m := map[string]string{}
				if ev.Type == metadata.EventPut {
					var err error
					if m, err = resources.ParseDynamicConfig(ev.Value); err != nil {
						s.log.Warn("unreadable dynamic configuration record", "err", err)
						continue
					}
				}
				s.applyDynamic(m)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
