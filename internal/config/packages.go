package config

import "errors"

// PackagesConfig is the packages management service (/admin/v3/packages, Pulsar's
// PackagesManagement): function, source and sink packages kept in ledgers, their metadata in
// the metadata store.
type PackagesConfig struct {
	// Enabled serves the packages API; off, it answers 503, as Pulsar serves nothing there.
	Enabled bool `key:"enablePackagesManagement" help:"serve the packages management API (/admin/v3/packages)"`
	// Replicas is the bookies each package ledger is written to (Pulsar's packagesReplicas).
	Replicas int `key:"packagesReplicas" help:"bookies each package is written to"`
	// MaxSizeMB bounds one uploaded package: an upload is streamed into ledgers and cut off
	// at this size, so no upload is held in memory (ours; Pulsar has no bound).
	MaxSizeMB int64 `key:"packagesMaxSizeMB" help:"largest package accepted by the packages API, in MiB (ours)"`
}

// DefaultPackagesConfig returns Pulsar's defaults (off, one replica) and a 256 MiB bound.
func DefaultPackagesConfig() PackagesConfig { return PackagesConfig{Replicas: 1, MaxSizeMB: 256} }

// Validate checks the bounds.
func (c *PackagesConfig) Validate() error {
	return errors.Join(
		Between("packagesReplicas", c.Replicas, 1, 16),
		Between("packagesMaxSizeMB", c.MaxSizeMB, 1, 4096),
	)
}
