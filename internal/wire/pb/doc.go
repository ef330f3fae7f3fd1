// Package pb holds the Go code generated from internal/wire/proto/pulsar_api.proto by
// `make proto` (protoc + protoc-gen-go). pulsar_api.pb.go is never edited by hand; this
// doc.go is the only hand-written file. Read proto2 fields through the generated getters so
// that absent fields take the protocol's defaults (durable=true, batch_index=-1, ...).
package pb
