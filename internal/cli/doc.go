// Package cli is the cobra command tree of the magnetar binary. main calls Main; every role and
// tool is a subcommand registered in roles.go. A subcommand loads its configuration through
// internal/config (flag > env > file > default), validates it, builds its logger and runs.
//
// Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error, or a subcommand
// that is not available yet.
package cli
