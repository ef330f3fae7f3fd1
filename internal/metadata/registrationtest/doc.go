// Package registrationtest checks metadata.Registration against a real store: the key is
// registered, updated, re-registered with the latest value after the session is lost, and
// removed on Close. The memstore and etcdstore tests both run it, each with its own way of
// making a session expire.
package registrationtest
