package ledger

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// FuzzBookieRecords reads back bookie registrations and decommission marks as the ledger
// client and `magnetar admin bookies` do, with the fuzzer's key and value in the metadata
// store. A malformed registration is ignored (never trusted, never a panic); an accepted one
// has an address and round-trips through JSON.
func FuzzBookieRecords(f *testing.F) {
	f.Add("10.0.0.1:3181", []byte(`{"address":"10.0.0.1:3181","rack":"/r1","state":"writable","instanceId":"ab"}`))
	f.Add("h:1", []byte(`{"state":"readonly"}`))
	f.Add("h:1", []byte(`{"address":""}`))
	f.Add("", []byte(`[`))
	f.Add("x/y", []byte(`{"address":7}`))
	f.Fuzz(func(t *testing.T, addr string, value []byte) {
		s := newBookieSet(nil, slog.New(slog.DiscardHandler))
		b, ok := s.parse(resources.BookieRegistrationsPrefix+addr, value)
		if ok {
			if b.Address == "" {
				t.Fatal("accepted a registration without an address")
			}
			var r resources.BookieRegistration
			if err := json.Unmarshal(value, &r); err != nil {
				t.Fatalf("accepted a registration that is not JSON: %v", err)
			}
		}
		st := memstore.New(memstore.DefaultOptions())
		defer st.Close()
		ctx := context.Background()
		if strings.ContainsAny(addr, "\x00") {
			return
		}
		if _, err := st.Put(ctx, resources.BookieRegistrationsPrefix+addr, value, metadata.AnyVersion); err != nil {
			return
		}
		_, _ = st.Put(ctx, decommissionPrefix+addr, value, metadata.AnyVersion)
		list, err := ListBookies(ctx, st)
		if err != nil {
			t.Fatalf("listing bookies: %v", err)
		}
		for _, l := range list {
			if l.Address == "" {
				t.Fatalf("listed a bookie without an address: %+v", l)
			}
		}
	})
}
