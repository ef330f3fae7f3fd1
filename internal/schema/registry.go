package schema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// Root is the metadata-store prefix of every schema (layout in doc.go).
const Root = resources.SchemasRoot

// maxAddAttempts bounds the optimistic retry of an add that lost a race with another
// writer of the same topic's schema.
const maxAddAttempts = 16

// ID names a topic's schema: tenant/namespace/topic without the domain and without the
// partition suffix, as in Pulsar (partitions, and the persistent and non-persistent
// topics of one name, share one schema history).
type ID struct {
	Tenant, Namespace, Topic string
}

func (id ID) String() string { return id.Tenant + "/" + id.Namespace + "/" + id.Topic }

func (id ID) prefix() string { return Root + "/" + id.String() + "/" }

func (id ID) valid() error {
	for _, p := range []string{id.Tenant, id.Namespace, id.Topic} {
		if p == "" || strings.Contains(p, "/") && p != id.Namespace {
			return fmt.Errorf("%w: schema id %q", ErrInvalid, id.String())
		}
	}
	return nil
}

// versionKey zero-pads the version so that List returns versions in order.
func (id ID) versionKey(v int64) string { return id.prefix() + fmt.Sprintf("%020d", v) }

// Entry is one stored version. A deleted entry is the tombstone a (non-forced) delete
// appends: versions before it no longer count, and versions go on after it.
type Entry struct {
	Version   int64
	Schema    Schema
	Timestamp int64 // ms since the epoch, when the version was added
	Deleted   bool
}

// record is the stored JSON of one version.
type record struct {
	Type       string            `json:"type"`
	Data       []byte            `json:"data"`
	Properties map[string]string `json:"properties,omitempty"`
	Timestamp  int64             `json:"timestamp"`
	Deleted    bool              `json:"deleted,omitempty"`
}

// Policy is what a namespace's policies (with the broker defaults) say about schemas.
type Policy struct {
	Strategy           Strategy // never Undefined
	AllowAutoUpdate    bool
	ValidationEnforced bool
}

// Registry stores schema versions in the metadata store and decides compatibility. It
// keeps no state of its own, so every broker (and the admin API) sees the same history,
// and a new version is added with a create-if-absent write: two writers racing for one
// version number cannot both win, the loser re-reads and re-checks.
type Registry struct {
	store metadata.Store
	res   *resources.Resources
	cfg   config.SchemaConfig
	log   *slog.Logger
	now   func() time.Time
}

// New returns a registry over store with the broker's schema settings.
func New(store metadata.Store, cfg config.SchemaConfig, logger *slog.Logger) *Registry {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Registry{store: store, res: resources.New(store), cfg: cfg, log: logger.With("component", "schema"), now: time.Now}
}

// Policy reads the namespace's schema policies. The strategy is the namespace's
// schema_compatibility_strategy, else its legacy schema_auto_update_compatibility_strategy,
// else the broker's schemaCompatibilityStrategy.
func (r *Registry) Policy(ctx context.Context, tenant, ns string) (Policy, error) {
	p, err := r.res.Namespace(ctx, tenant, ns)
	if err != nil {
		return Policy{}, fmt.Errorf("schema: namespace %s/%s: %w", tenant, ns, err)
	}
	pol := Policy{AllowAutoUpdate: r.cfg.AllowAutoUpdateSchema, ValidationEnforced: r.cfg.ValidationEnforced || p.SchemaValidationEnforced}
	if p.IsAllowAutoUpdateSchema != nil {
		pol.AllowAutoUpdate = *p.IsAllowAutoUpdateSchema
	}
	pol.Strategy, _ = ParseStrategy(p.SchemaCompatibility)
	if pol.Strategy == Undefined && p.SchemaAutoUpdateCompat != "" {
		if strings.EqualFold(p.SchemaAutoUpdateCompat, "AutoUpdateDisabled") {
			pol.Strategy = AlwaysIncompatible
		} else {
			pol.Strategy, _ = ParseStrategy(p.SchemaAutoUpdateCompat)
		}
	}
	if pol.Strategy == Undefined || pol.Strategy == "" {
		pol.Strategy, err = ParseStrategy(r.cfg.CompatibilityStrategy)
		if err != nil || pol.Strategy == Undefined {
			pol.Strategy = Full
		}
	}
	return pol, nil
}

// history returns every stored version of id, oldest first.
func (r *Registry) history(ctx context.Context, id ID) ([]Entry, error) {
	if err := id.valid(); err != nil {
		return nil, err
	}
	kvs, err := r.store.List(ctx, id.prefix())
	if err != nil {
		return nil, fmt.Errorf("schema: list %s: %w", id, err)
	}
	out := make([]Entry, 0, len(kvs))
	for _, kv := range kvs {
		v, err := strconv.ParseInt(strings.TrimPrefix(kv.Key, id.prefix()), 10, 64)
		if err != nil {
			continue // not a version key
		}
		var rec record
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return nil, fmt.Errorf("schema: %s version %d: corrupt record: %w", id, v, err)
		}
		t, err := ParseType(rec.Type)
		if err != nil {
			return nil, fmt.Errorf("schema: %s version %d: %w", id, v, err)
		}
		out = append(out, Entry{Version: v, Schema: Schema{Type: t, Data: rec.Data, Properties: rec.Properties},
			Timestamp: rec.Timestamp, Deleted: rec.Deleted})
	}
	return out, nil
}

// live is the part of a history after its last tombstone: the versions that count.
func live(h []Entry) []Entry {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Deleted {
			return h[i+1:]
		}
	}
	return h
}

func schemasOf(es []Entry) []Schema {
	out := make([]Schema, len(es))
	for i, e := range es {
		out[i] = e.Schema
	}
	return out
}

// Latest returns the newest version, or ErrNotFound if there is none or it was deleted.
func (r *Registry) Latest(ctx context.Context, id ID) (Entry, error) {
	h, err := r.history(ctx, id)
	if err != nil {
		return Entry{}, err
	}
	if len(h) == 0 || h[len(h)-1].Deleted {
		return Entry{}, fmt.Errorf("%w: schema not found for topic %s", ErrNotFound, id)
	}
	return h[len(h)-1], nil
}

// Get returns one live version. A deleted schema's versions are gone for readers too (a
// consumer decoding an old message then gets "schema not found", as with Pulsar), though
// their keys stay until a forced delete so numbering goes on.
func (r *Registry) Get(ctx context.Context, id ID, version int64) (Entry, error) {
	h, err := r.history(ctx, id)
	if err != nil {
		return Entry{}, err
	}
	for _, e := range live(h) {
		if e.Version == version {
			return e, nil
		}
	}
	return Entry{}, fmt.Errorf("%w: schema not found for topic %s, version %d", ErrNotFound, id, version)
}

// All returns the live versions, oldest first (empty if none).
func (r *Registry) All(ctx context.Context, id ID) ([]Entry, error) {
	h, err := r.history(ctx, id)
	if err != nil {
		return nil, err
	}
	return live(h), nil
}

// VersionOf returns the live version whose type and data equal s, or ErrNotFound.
func (r *Registry) VersionOf(ctx context.Context, id ID, s Schema) (int64, error) {
	h, err := r.history(ctx, id)
	if err != nil {
		return 0, err
	}
	for _, e := range live(h) {
		if e.Schema.sameAs(s) {
			return e.Version, nil
		}
	}
	return 0, fmt.Errorf("%w: topic %s has no version of this %s schema", ErrNotFound, id, s.Type)
}

// Check tests whether s could be added under strategy (Undefined: the namespace's).
func (r *Registry) Check(ctx context.Context, id ID, s Schema, strategy Strategy) (Strategy, error) {
	if strategy == Undefined || strategy == "" {
		pol, err := r.Policy(ctx, id.Tenant, id.Namespace)
		if err != nil {
			return "", err
		}
		strategy = pol.Strategy
	}
	if err := validate(s, r.cfg.MaxSchemaSizeBytes); err != nil {
		return strategy, err
	}
	h, err := r.history(ctx, id)
	if err != nil {
		return strategy, err
	}
	lv := live(h)
	for _, e := range lv {
		if e.Schema.sameAs(s) {
			return strategy, nil
		}
	}
	return strategy, checkEvolution(strategy, schemasOf(lv), s)
}

// Put registers s if it is not yet a live version (Pulsar's putSchemaIfAbsent): an equal
// live version is returned as is; otherwise s must pass the namespace's strategy against
// the live versions and becomes the next version. Used by the admin API and, through
// GetOrCreate, by producers.
func (r *Registry) Put(ctx context.Context, id ID, s Schema) (int64, error) {
	pol, err := r.Policy(ctx, id.Tenant, id.Namespace)
	if err != nil {
		return 0, err
	}
	return r.put(ctx, id, s, pol.Strategy)
}

func (r *Registry) put(ctx context.Context, id ID, s Schema, strategy Strategy) (int64, error) {
	if err := validate(s, r.cfg.MaxSchemaSizeBytes); err != nil {
		return 0, err
	}
	for range maxAddAttempts {
		h, err := r.history(ctx, id)
		if err != nil {
			return 0, err
		}
		lv := live(h)
		for _, e := range lv {
			if e.Schema.sameAs(s) {
				return e.Version, nil
			}
		}
		if err := checkEvolution(strategy, schemasOf(lv), s); err != nil {
			return 0, err
		}
		next := int64(0)
		if len(h) > 0 {
			next = h[len(h)-1].Version + 1
		}
		if err := r.checkRoom(id, h); err != nil {
			return 0, err
		}
		v, err := r.write(ctx, id, next, record{Type: s.Type.String(), Data: s.Data, Properties: s.Properties, Timestamp: r.now().UnixMilli()})
		if errors.Is(err, metadata.ErrBadVersion) {
			continue // another writer took this version: re-read and re-check
		}
		if err != nil {
			return 0, err
		}
		r.log.Info("schema version added", "topic", id.String(), "version", v, "type", s.Type.String(), "strategy", string(strategy))
		return v, nil
	}
	return 0, fmt.Errorf("schema: %s: too many concurrent schema updates, try again: %w", id, metadata.ErrBadVersion)
}

// checkRoom refuses a new version once the topic holds maxSchemaVersionsPerTopic.
func (r *Registry) checkRoom(id ID, h []Entry) error {
	if m := r.cfg.MaxVersionsPerTopic; m > 0 && len(h) >= m {
		return fmt.Errorf("%w: topic %s already stores %d schema versions (maxSchemaVersionsPerTopic); force-delete its schema to start again", ErrInvalid, id, len(h))
	}
	return nil
}

func (r *Registry) write(ctx context.Context, id ID, v int64, rec record) (int64, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return 0, fmt.Errorf("schema: encode: %w", err)
	}
	if _, err := r.store.Put(ctx, id.versionKey(v), b, metadata.NotExists); err != nil {
		return 0, fmt.Errorf("schema: write %s version %d: %w", id, v, err)
	}
	return v, nil
}

// GetOrCreate is what a producer with schema s gets (Pulsar's addSchema): with auto
// update allowed, Put; without, only an already registered live version.
func (r *Registry) GetOrCreate(ctx context.Context, id ID, s Schema) (int64, error) {
	pol, err := r.Policy(ctx, id.Tenant, id.Namespace)
	if err != nil {
		return 0, err
	}
	if pol.AllowAutoUpdate {
		return r.put(ctx, id, s, pol.Strategy)
	}
	v, err := r.VersionOf(ctx, id, s)
	if errors.Is(err, ErrNotFound) {
		return 0, fmt.Errorf("%w: schema not found and schema auto updating is disabled", ErrIncompatible)
	}
	return v, err
}

// CheckProducerWithoutSchema refuses a producer that brings no schema to a topic with one
// when the namespace (or broker) enforces schema validation.
func (r *Registry) CheckProducerWithoutSchema(ctx context.Context, id ID) error {
	pol, err := r.Policy(ctx, id.Tenant, id.Namespace)
	if err != nil || !pol.ValidationEnforced {
		return err
	}
	if _, err := r.Latest(ctx, id); err == nil {
		return fmt.Errorf("%w: producers cannot connect without a schema to topic %s, which has one", ErrIncompatible, id)
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// AttachConsumer checks a consumer's schema (PIP-44 rules, see checkConsumer). A topic
// without schema gets the consumer's schema registered when it is idle (the caller knows:
// no producers, consumers or messages) and auto update is allowed; a busy topic without
// schema accepts the consumer as it is.
func (r *Registry) AttachConsumer(ctx context.Context, id ID, s Schema, idle bool) error {
	pol, err := r.Policy(ctx, id.Tenant, id.Namespace)
	if err != nil {
		return err
	}
	if err := validate(s, r.cfg.MaxSchemaSizeBytes); err != nil {
		return err
	}
	h, err := r.history(ctx, id)
	if err != nil {
		return err
	}
	lv := live(h)
	if len(lv) == 0 {
		if !idle || !pol.AllowAutoUpdate {
			return nil
		}
		_, err := r.put(ctx, id, s, pol.Strategy)
		return err
	}
	return checkConsumer(pol.Strategy, schemasOf(lv), s)
}

// Delete removes id's schema. Without force it appends a tombstone (Pulsar's soft delete:
// the history stays readable by version and numbering goes on); with force every version
// is removed and numbering starts again at 0. It returns the tombstone's version (or the
// last version removed) and ErrNotFound if there is nothing to delete.
func (r *Registry) Delete(ctx context.Context, id ID, force bool) (int64, error) {
	for range maxAddAttempts {
		h, err := r.history(ctx, id)
		if err != nil {
			return 0, err
		}
		if len(h) == 0 || (!force && h[len(h)-1].Deleted) {
			return 0, fmt.Errorf("%w: topic %s has no schema", ErrNotFound, id)
		}
		last := h[len(h)-1].Version
		if force {
			for _, e := range h {
				if err := r.store.Delete(ctx, id.versionKey(e.Version), metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
					return 0, fmt.Errorf("schema: delete %s version %d: %w", id, e.Version, err)
				}
			}
			r.log.Info("schema deleted (forced)", "topic", id.String(), "versions", len(h))
			return last, nil
		}
		if err := r.checkRoom(id, h); err != nil {
			return 0, err
		}
		v, err := r.write(ctx, id, last+1, record{Type: h[len(h)-1].Schema.Type.String(), Timestamp: r.now().UnixMilli(), Deleted: true})
		if errors.Is(err, metadata.ErrBadVersion) {
			continue
		}
		if err != nil {
			return 0, err
		}
		r.log.Info("schema deleted", "topic", id.String(), "tombstone", v)
		return v, nil
	}
	return 0, fmt.Errorf("schema: %s: too many concurrent schema updates, try again: %w", id, metadata.ErrBadVersion)
}
