package config

import "errors"

// SchemaConfig is the broker's schema registry: the defaults namespace policies fall back
// to and the bound on stored schemas. Keys are Pulsar's broker.conf keys where one exists.
// None of these reload at runtime (namespace policies do).
type SchemaConfig struct {
	// CompatibilityStrategy is used for namespaces whose schema_compatibility_strategy is
	// unset or UNDEFINED.
	CompatibilityStrategy string `key:"schemaCompatibilityStrategy" help:"default schema compatibility strategy: ALWAYS_COMPATIBLE, ALWAYS_INCOMPATIBLE, BACKWARD, FORWARD, FULL or a *_TRANSITIVE form"`
	// AllowAutoUpdateSchema lets producers and consumers register new schema versions,
	// unless a namespace's is_allow_auto_update_schema says otherwise.
	AllowAutoUpdateSchema bool `key:"isAllowAutoUpdateSchemaEnabled" help:"let producers and consumers register new schema versions"`
	// ValidationEnforced refuses producers without a schema on topics that have one,
	// unless a namespace's schema_validation_enforced is set.
	ValidationEnforced bool `key:"isSchemaValidationEnforced" help:"refuse producers without a schema on topics that have one"`
	// MaxSchemaSizeBytes bounds one schema definition. Each version is one metadata key,
	// so this must stay below the metadata store's value limit (etcd: 1.5 MiB).
	MaxSchemaSizeBytes int `key:"maxSchemaSizeBytes" help:"largest schema definition accepted, in bytes"`
	// MaxVersionsPerTopic bounds a topic's stored versions (tombstones included), so one
	// history read stays bounded; a forced delete of the schema starts it again.
	MaxVersionsPerTopic int `key:"maxSchemaVersionsPerTopic" help:"most schema versions stored per topic, deletion markers included"`
}

// DefaultSchemaConfig returns Pulsar's defaults (FULL, auto update on, not enforced).
func DefaultSchemaConfig() SchemaConfig {
	return SchemaConfig{
		CompatibilityStrategy: "FULL",
		AllowAutoUpdateSchema: true,
		MaxSchemaSizeBytes:    512 << 10,
		MaxVersionsPerTopic:   1000,
	}
}

// Validate checks the schema settings.
func (c *SchemaConfig) Validate() error {
	return errors.Join(
		OneOf("schemaCompatibilityStrategy", c.CompatibilityStrategy, "ALWAYS_COMPATIBLE", "ALWAYS_INCOMPATIBLE",
			"BACKWARD", "FORWARD", "FULL", "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE"),
		Between("maxSchemaSizeBytes", c.MaxSchemaSizeBytes, 1, 1<<20),
		Between("maxSchemaVersionsPerTopic", c.MaxVersionsPerTopic, 1, 100000),
	)
}
