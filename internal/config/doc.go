// Package config gives every role its configuration: defaults, an optional config file,
// environment variables and command-line flags, in that order of precedence
// (a flag beats the environment, which beats the file, which beats the default).
//
// Each role has a plain struct (BookieConfig, BrokerConfig, ...) built by its Default*Config
// function and checked by its Validate method. Fields carry a `key` tag with the Pulsar or
// BookKeeper key name where one exists (maxMessageSize, journalDirectories, ...) and a `help`
// tag. From the key the binding derives:
//
//	flag:  --max-message-size           (kebab case; override with a `flag` tag)
//	env:   MAGNETAR_MAX_MESSAGE_SIZE    (upper snake case of the flag name)
//	       PULSAR_PREFIX_maxMessageSize (as Pulsar's docker images accept)
//	       maxMessageSize               (the exact key, likewise)
//
// # Config files
//
// `--config` reads Pulsar's and BookKeeper's own files as they are (standalone.conf,
// broker.conf, bookkeeper.conf, proxy.conf, client.conf), in the Java-properties format
// (properties.go:ReadFile):
//
//	# comment (also "!")
//	key=value        (or key: value, or key value; surrounding blanks are trimmed)
//	key=a,\
//	    b            (a trailing backslash continues the line)
//
// A key Magnetar binds keeps Pulsar's meaning; a blank value keeps the default, as in
// Pulsar. A key of Pulsar's or BookKeeper's that Magnetar does not bind (zookeeperServers,
// Java class names, JVM and load-balancer tuning: pulsar_keys.txt) is accepted and listed
// in one startup warning, with any keys unknown to both. It is an error, naming the file and
// line, when a key is a likely typo of a bound one (the error suggests it), when a value
// does not parse, when Validate finds it out of bounds (Locate adds where it came from),
// and when it turns on TLS or authentication that this build lacks (securityGate).
// Lists are comma separated; durations use Go syntax (1ms, 30s).
//
// A file named *.yml or *.yaml is YAML (Pulsar's functions_worker.yml, yaml.go:parseYAML):
// the same keys, lists as YAML lists, the entries of `properties:` as keys of their own, and
// other nested mappings as dotted keys (functionRuntimeFactoryConfigs.logDirectory) reported
// like unbound Pulsar keys when their top-level key is one.
package config
