package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// Benchmark measures single-client CAS puts, CAS puts from GOMAXPROCS goroutines on keys of
// their own (what group commit batches), and gets, on s.
func Benchmark(b *testing.B, s metadata.Store) {
	ctx := context.Background()
	b.Run("PutCAS", func(b *testing.B) {
		v, err := s.Put(ctx, "/bench/cas", []byte("x"), metadata.AnyVersion)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if v, err = s.Put(ctx, "/bench/cas", []byte("x"), v); err != nil {
				b.Fatal(err)
			}
		}
	})
	var n atomic.Int64 // across rounds too: b.Run calls the function once per round
	b.Run("PutCASParallel", func(b *testing.B) {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			key := fmt.Sprintf("/bench/par/%d", n.Add(1))
			v := metadata.NotExists
			for pb.Next() {
				var err error
				if v, err = s.Put(ctx, key, []byte("x"), v); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("Get", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Get(ctx, "/bench/cas"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
