// Package console serves the web console under /ui on the HTTP port of brokers and
// standalone (and through the proxy, which forwards HTTP): the built assets in dist/,
// embedded with go:embed, and /ui/config.json with the console's settings.
//
// The console has no data path of its own: the page calls the same admin REST API
// (/admin/v2, /admin/v3, /metrics) pulsar-admin uses, from the browser, with the caller's
// token. What a user sees and may do is therefore what authentication and authorization
// give their role; the console only leaves out buttons the role cannot use, and in read-only
// mode (consoleReadOnly) every button that changes something.
//
// Sources are in web/src; web/build.mjs (Node, no dependencies) bundles them into dist/,
// deterministically, and the built files are committed, so `make build` needs only Go. A
// test rebuilds them with Node and fails if dist/ is not what the sources give (`make
// console` rebuilds).
package console
