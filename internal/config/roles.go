package config

import (
	"errors"
	"net"
	"strconv"
)

// LogConfig is shared by every subcommand (root persistent flags).
type LogConfig struct {
	Level  string `key:"logLevel" help:"log level: debug, info, warn, error"`
	Format string `key:"logFormat" help:"log format: text or json"`
}

// DefaultLogConfig returns the logging defaults.
func DefaultLogConfig() LogConfig { return LogConfig{Level: "info", Format: "text"} }

// Validate checks the logging settings.
func (c *LogConfig) Validate() error {
	return errors.Join(
		OneOf("logLevel", c.Level, "debug", "info", "warn", "error"),
		OneOf("logFormat", c.Format, "text", "json"),
	)
}

// CheckHostPort checks a listen or advertised "host:port" address.
func CheckHostPort(key, v string) error {
	_, p, err := net.SplitHostPort(v)
	if err != nil {
		return &FieldError{Key: key, Value: v, Reason: "must be host:port"}
	}
	if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 65535 {
		return &FieldError{Key: key, Value: v, Reason: "port must be between 0 and 65535"}
	}
	return nil
}
