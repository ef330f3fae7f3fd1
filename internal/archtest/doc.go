// Package archtest enforces the layering of docs/ARCHITECTURE.md §3: its test parses the
// imports of every Go file of the module (test files and files behind build tags included)
// and fails on an import the rules table (rules.go) does not allow, on a package no rule
// covers, and on an entry of the known-violations list that no longer occurs.
//
// Adding a package: add one line to parts in rules.go (its path, its layer, and the
// exceptions it needs, if any) and the same line to the table in docs/ARCHITECTURE.md §3.
// The package holds no code that other packages use.
package archtest
