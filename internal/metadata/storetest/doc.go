// Package storetest is the conformance suite every metadata.Store implementation passes:
// memstore, etcdstore over a client, and etcdstore over an embedded member.
//
// Run calls newStore once per subtest. Subtests run in parallel and keep their keys under a
// prefix made from their own name, so a factory may hand out handles on one shared backend
// (one embedded etcd for the whole suite) instead of starting a backend per subtest.
//
// A store that can simulate the loss of a session (its keep-alives stop) implements Expirer;
// the suite then also checks that an expired session's keys vanish and its Done fires.
package storetest
