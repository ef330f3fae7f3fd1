// Package config gives every role its configuration: defaults, an optional config file,
// MAGNETAR_* environment variables and command-line flags, in that order of precedence
// (a flag beats the environment, which beats the file, which beats the default).
//
// Each role has a plain struct (BookieConfig, BrokerConfig, ...) built by its Default*Config
// function and checked by its Validate method. Fields carry a `key` tag with the Pulsar or
// BookKeeper key name where one exists (maxMessageSize, journalDirectories, ...) and a `help`
// tag. From the key the binding derives:
//
//	flag:  --max-message-size           (kebab case; override with a `flag` tag)
//	env:   MAGNETAR_MAX_MESSAGE_SIZE    (upper snake case of the flag name)
//	       maxMessageSize               (the exact key, as Pulsar's docker images accept)
//
// # Config file format
//
// Java-properties, as Pulsar's conf/*.conf files:
//
//	# comment (also "!")
//	key=value        (or key: value; surrounding space is trimmed)
//
// A key the running role does not know is an error that names the file and line, never
// silently ignored. Lists are comma separated; durations use Go syntax (1ms, 30s).
package config
