// Package pf is Magnetar's SDK for Go functions: compile a handler into your binary with
//
//	func main() { pf.Start(exclaim) }
//
// and submit the binary with `magnetar admin functions create --go ./binary ...` (or
// pulsar-admin). The worker starts one process per instance as
// `<binary> -instance-conf '<json>'` with Pulsar's GoInstanceConfig fields (conf.go), and
// talks to it over the InstanceControl gRPC service (package pfpb) on the conf's "port":
// status, metrics, health check. The same binary runs Pulsar's Go instance contract, so a
// Pulsar worker can run it too.
//
// An instance is one consumer per input topic (Shared, Failover with retainOrdering or
// EFFECTIVELY_ONCE, Key_Shared with retainKeyOrdering), each with its input's own schema
// type (schema.go), feeding one sequential processing loop, and one producer for the output (per input partition under EFFECTIVELY_ONCE, see
// instance_eo.go). The handler gets a context from which FromContext returns the
// *FunctionContext: user config, secrets, state, publish, metrics, logging, manual ack.
//
// This package must not import Magnetar's internal packages: it is linked into users'
// binaries. The worker's WASM runtime reuses its instance engine (NewInstance) in process.
package pf
