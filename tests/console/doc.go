// Package console holds the web console's browser test (build tag consoletest; run it with
// `make console-test`): a real standalone filled with data by the official Go client, and
// playwright-core (npm, cached in ~/.cache/magnetar-console) driving Debian's chromium
// through every page (console.mjs), writing the screenshots in docs/console/.
package console
