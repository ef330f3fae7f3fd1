// Package pfwasm is the guest SDK for Go functions compiled to WebAssembly and run by the
// worker's in-process wasm runtime (internal/functions/wasm, whose doc.go is the ABI):
//
//	//go:build wasip1
//	package main
//
//	import "github.com/magnetar-io/magnetar/pkg/pfwasm"
//
//	func init() { pfwasm.Handle(func(c *pfwasm.Context, in []byte) ([]byte, error) { return append(in, '!'), nil }) }
//	func main() {}
//
// Build with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o fn.wasm, and create
// the function with --wasm fn.wasm. Register the handler in init: a c-shared module's main
// does not run before the host's first call.
package pfwasm
