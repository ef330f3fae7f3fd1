//go:build deps

// Package deps pins the project's chosen dependencies (ARCHITECTURE.md §5) in go.mod before
// every package that uses them exists, so parallel work does not race on go.mod.
package deps

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/apache/pulsar-client-go/pulsar"
	_ "github.com/apache/pulsar-client-go/pulsaradmin"
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/pierrec/lz4/v4"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/client/v3/concurrency"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "google.golang.org/protobuf/proto"
)
