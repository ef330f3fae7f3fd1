package localstore

import (
	"testing"

	"github.com/magnetar-io/magnetar/internal/metadata/storetest"
)

// BenchmarkLocal measures the same operations as etcdstore's BenchmarkEmbedded on a local
// store (fsync on every group commit):
//
//	go test -tags pebblegozstd -run '^$' -bench . ./internal/metadata/localstore/ ./internal/metadata/etcdstore/
func BenchmarkLocal(b *testing.B) {
	s, err := Open(b.TempDir(), Options{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.Benchmark(b, s)
}
