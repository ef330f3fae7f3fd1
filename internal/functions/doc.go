// Package functions is the Pulsar Functions worker: function metadata, packages and
// assignments stored in the cluster, an elected leader that assigns instances to workers,
// and the runtimes that run them (process: Go binaries and Python; wasm: in process). It
// serves the admin REST API under /admin/v3/functions and the worker endpoints under
// /admin/v2/worker and /admin/v2/worker-stats. docs/design/functions.md is its chapter.
//
// Files: worker.go (lifecycle, leader loop, running assignments), scheduler.go (the pure
// assignment function), meta.go (metadata layout and records), packages.go (packages in
// ledgers), state.go (state values), config.go (FunctionConfig and its validation),
// supervisor.go (restart with backoff, health checks, limits), process.go and python.go
// (process runtime), wasm_runtime.go (in-process runtime over package wasm), api*.go (REST),
// mount.go (the composition roots' hook).
package functions
