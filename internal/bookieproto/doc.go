// Package bookieproto is the bookie's network protocol: frame layout, request and response
// encoding, status codes, and the pipelined Client the ledger library uses. The bookie server
// (internal/bookie) and the ledger client (internal/ledger) both import it; neither imports the
// other.
package bookieproto
