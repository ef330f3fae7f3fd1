// Package python holds Magnetar's runner for Python functions (runner.py): it runs a class
// or function written against the official pulsar-client wheel's pulsar.Function API in a
// per-function virtualenv, with the instance contract of a Go instance (-instance-conf JSON,
// InstanceControl over gRPC), so the worker supervises both alike.
package python

import _ "embed"

// Runner is runner.py.
//
//go:embed runner.py
var Runner []byte
