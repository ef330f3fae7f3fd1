// Package clock is the time seam of the broker's time-dependent logic: message TTL and
// retention by time (the managed-ledger factory), transaction timeouts (the coordinators),
// delayed delivery (the topic service). They read time and arm timers through a Clock
// instead of the time package, so that
//
//   - tests jump time with a Fake (Advance runs the timers that came due) instead of
//     sleeping through a TTL or a transaction timeout, and
//   - the chaos harness skews one broker's clock with Offset (reliability.md R12: a clock
//     ±5 min off must not break safety, because leases rely on the metadata store's session
//     TTL, not on local wall time), switched on by a hidden test-only flag.
//
// Durations measured for metrics and context deadlines of I/O stay on the time package:
// they are about how long something took here, not about what time it is.
package clock
