package config

import "errors"

// StandaloneConfig is what `magnetar standalone` runs: metadata, bookie and broker in one
// process with their data under one directory.
type StandaloneConfig struct {
	DataDir string `key:"dataDir" flag:"data-dir" help:"directory that holds all standalone data"`
}

// DefaultStandaloneConfig returns the standalone defaults.
func DefaultStandaloneConfig() StandaloneConfig {
	return StandaloneConfig{DataDir: "./data"}
}

// Validate checks the standalone settings.
func (c *StandaloneConfig) Validate() error {
	return errors.Join(NotEmpty("dataDir", c.DataDir))
}
