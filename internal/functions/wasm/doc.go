// Package wasm runs functions compiled to WebAssembly inside the worker process with wazero:
// no process per instance, a linear-memory limit per instance and a time budget per call.
// A module is one function; the instance engine around it (consumers, producers,
// guarantees, windows) is the Go SDK's (pkg/pf), so WASM functions behave exactly as Go
// ones do. Nothing in Pulsar offers this; Redpanda's data transforms work the same way.
//
// # ABI (version 1)
//
// The module exports:
//
//	memory                               its linear memory
//	pf_alloc(size i32) -> ptr i32        a guest buffer of size bytes the host writes input into
//	pf_process(ptr i32, len i32) -> i32  process one payload; 0 = done, else failed
//	pf_process_window(ptr, len) -> i32   (windowed functions) process one window, encoded as
//	                                     u32le count, then per record u32le length + payload
//	_initialize                          (optional) run once at instantiation (Go's c-shared
//	                                     reactor, WASI reactors)
//	pf_alloc_reusable() -> i32           (optional) 1: the buffer of a pf_alloc(size) stays
//	                                     valid for every later input of at most size bytes
//	                                     until the next pf_alloc; the host then calls pf_alloc
//	                                     only for a larger input (pkg/pfwasm exports it)
//
// and may import, from module "magnetar" (all lengths i32, pointers into guest memory):
//
//	set_output(ptr, len)                 the result payload of this call (none: no output)
//	set_error(ptr, len)                  why this call failed (with a nonzero return)
//	log(level i32, ptr, len)             a log line (level: slog's, 0 = info)
//	take(ptr)                            copy the pending host result into the guest
//	state_get(key, klen) -> i64          value length, pending for take; -1 absent, -2 error
//	state_put(key, klen, val, vlen) -> i32   0 ok
//	state_del(key, klen) -> i32          0 ok, 1 absent
//	counter_incr(key, klen, by i64) -> i64   the new value (MinInt64 on error)
//	counter_get(key, klen) -> i64        the value (0 when absent; MinInt64 on error)
//	user_config(key, klen) -> i64        the JSON of userConfig[key], pending; -1 absent
//	current(field i32) -> i64            the current record's field, pending: 0 topic, 1 key,
//	                                     2 message id, 3 properties as JSON
//	publish(topic, tlen, val, vlen) -> i32   0 ok
//
// WASI preview 1 is provided (clock, random; no files, no network, stdout/stderr to the
// worker's log). pkg/pfwasm is the Go guest SDK (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared).
//
// # Limits
//
// Memory: the module's memory may not grow past min(resources.ram, functionsWasmMaxMemoryMB);
// a grow beyond fails inside the guest (Go's runtime then aborts: a trap). Time: one call may
// run functionsWasmMaxInvocationMs of wall-clock time (a single-threaded guest cannot use
// more CPU than that); past it the module is closed. A trap or a timeout fails that record
// (a user exception, redelivered per the guarantees) and the module is instantiated anew for
// the next one, so one bad record never takes the worker or other instances down.
package wasm
