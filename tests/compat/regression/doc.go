// Package regression holds a regression test for each failure that the official clients'
// suites (make compat, docs/compatibility.md) found in Magnetar, each run in make test
// against a real standalone in this process with the official Go client. A test names the
// client test that found the failure.
package regression
