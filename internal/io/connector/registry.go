package connector

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Definition describes a built-in connector (Pulsar's ConnectorDefinition plus the
// factories). A connector may be a source, a sink or both.
type Definition struct {
	Name        string
	Description string
	// SourceClass and SinkClass are the class names Pulsar's connector of this name
	// reports, so tools that look at them see what they expect.
	SourceClass string
	SinkClass   string
	NewSource   func() Source
	NewSink     func() Sink
	// Fields documents the connector's config keys (configdefinition).
	SourceFields, SinkFields []Field
	// SourceRoutes says the source picks each record's topic (per-table topics), so
	// topicName is optional.
	SourceRoutes bool
	// SingleInstance says the source reads one ordered stream: parallelism must be 1.
	SingleInstance bool
	// EffectivelyOnceSink says the sink's writes are idempotent (upsert by key), so
	// EFFECTIVELY_ONCE is accepted for it.
	EffectivelyOnceSink bool
}

// Field is one config key of a connector (Pulsar's ConfigFieldDefinition).
type Field struct {
	Name       string            `json:"fieldName"`
	TypeName   string            `json:"typeName"`
	Attributes map[string]string `json:"attributes"`
}

// Registry holds the built-in connectors by name.
type Registry struct {
	mu   sync.RWMutex
	defs map[string]*Definition
	// load rebuilds the definitions (reloadBuiltInSources / reloadBuiltInSinks).
	load func() []*Definition
}

// NewRegistry builds a registry from load, which it calls now and on every Reload.
func NewRegistry(load func() []*Definition) *Registry {
	r := &Registry{load: load}
	r.Reload()
	return r
}

// Reload rebuilds the definitions. Built-ins are compiled in, so this re-reads the same
// list; it exists because Pulsar's reloadBuiltInSources/Sinks does.
func (r *Registry) Reload() {
	defs := map[string]*Definition{}
	if r.load != nil {
		for _, d := range r.load() {
			defs[d.Name] = d
		}
	}
	r.mu.Lock()
	r.defs = defs
	r.mu.Unlock()
}

// ErrUnknownConnector is an archive that names no built-in connector.
var ErrUnknownConnector = errors.New("connector: unknown built-in connector")

// BuiltinPrefix starts an archive that names a built-in connector.
const BuiltinPrefix = "builtin://"

// Lookup returns the definition of a built-in by name or archive (builtin://name).
func (r *Registry) Lookup(nameOrArchive string) (*Definition, error) {
	name := strings.TrimPrefix(nameOrArchive, BuiltinPrefix)
	r.mu.RLock()
	d, ok := r.defs[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (available: %s)", ErrUnknownConnector, name, strings.Join(r.Names(), ", "))
	}
	return d, nil
}

// Names lists every built-in's name, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.defs))
	for n := range r.defs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Sources lists the definitions that can act as a source, by name.
func (r *Registry) Sources() []*Definition {
	return r.filter(func(d *Definition) bool { return d.NewSource != nil })
}

// Sinks lists the definitions that can act as a sink, by name.
func (r *Registry) Sinks() []*Definition {
	return r.filter(func(d *Definition) bool { return d.NewSink != nil })
}

func (r *Registry) filter(keep func(*Definition) bool) []*Definition {
	var out []*Definition
	for _, n := range r.Names() {
		r.mu.RLock()
		d := r.defs[n]
		r.mu.RUnlock()
		if d != nil && keep(d) {
			out = append(out, d)
		}
	}
	return out
}
