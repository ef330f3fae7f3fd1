package bookie

import (
	"context"
	"sync"
	"testing"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/logging"
)

// BenchmarkAddPipelined measures the network path alone (memory storage): 100-byte adds,
// 256 in flight, one connection.
func BenchmarkAddPipelined(b *testing.B) { benchAdds(b, storage.NewMemory()) }

// BenchmarkAddPipelinedDisk is the same on the disk storage with fsync on.
func BenchmarkAddPipelinedDisk(b *testing.B) {
	st, err := storage.Open(testConfig(b.TempDir()).Storage, logging.Discard(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	benchAdds(b, st)
}

func benchAdds(b *testing.B, st storage.Storage) {
	f := startBookie(b, st, nil)
	defer func() { _ = f.client.Close(); _ = f.b.Close() }()
	payload := make([]byte, 100)
	sem := make(chan struct{}, 256)
	var wg sync.WaitGroup
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sem <- struct{}{}
		wg.Add(1)
		f.client.AddEntry(context.Background(), f.addr, bookieproto.AddRequest{LedgerID: 1, EntryID: int64(i), MasterKey: key, LAC: int64(i) - 1, Payload: payload}, func(err error) {
			if err != nil {
				b.Error(err)
			}
			<-sem
			wg.Done()
		})
	}
	wg.Wait()
}
