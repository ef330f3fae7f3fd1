// Package logging builds the process-wide log/slog logger from --log-level and --log-format.
//
// Every component takes a *slog.Logger and derives its own with Component, so one log line
// always says which part of the process wrote it ("component=bookie").
package logging
