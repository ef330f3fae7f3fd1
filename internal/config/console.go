package config

// ConsoleConfig is the web console served under /ui (internal/console).
type ConsoleConfig struct {
	// Enabled serves the console on the HTTP port.
	Enabled bool `key:"consoleEnabled" help:"serve the web console under /ui on the HTTP port"`
	// ReadOnly leaves every button that changes something out of the console. It is a
	// convenience for viewing deployments, not a permission: what a user may change is
	// decided by authorization, as for any admin API client.
	ReadOnly bool `key:"consoleReadOnly" help:"web console without any button that changes something (authorization still decides what the API allows)"`
}

// DefaultConsoleConfig returns the defaults: served, not read-only.
func DefaultConsoleConfig() ConsoleConfig { return ConsoleConfig{Enabled: true} }
