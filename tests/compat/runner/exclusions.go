package main

// exclusions are tests that cannot pass for a reason outside Magnetar, keyed "suite/Test",
// each with the reason proven against the client's source (docs/compatibility.md repeats
// them). A test is listed here only with that proof; everything else must pass.
var exclusions = map[string]string{}
