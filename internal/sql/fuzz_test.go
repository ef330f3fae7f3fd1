package sql

import (
	"bytes"
	"context"
	"testing"

	gms "github.com/dolthub/go-mysql-server/sql"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/schema"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// FuzzScanEntry feeds arbitrary stored entries to a scan of every column: whatever the
// bytes (entry framing, metadata, batch, compression, payload), the statement returns rows
// or an error, never a panic.
func FuzzScanEntry(f *testing.F) {
	md := &pb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(1_700_000_000_000)}
	good, err := wire.AppendEntry(nil, md, []byte(`{"id":1,"item":"x","qty":2,"price":1.5}`))
	if err != nil {
		f.Fatal(err)
	}
	var body []byte
	for i := range 3 {
		smm := &pb.SingleMessageMetadata{SequenceId: proto.Uint64(uint64(i)), PartitionKey: proto.String("k")}
		if body, err = wire.AppendBatchMessage(body, smm, []byte(`{"id":2,"qty":3}`)); err != nil {
			f.Fatal(err)
		}
	}
	bmd := &pb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(1), NumMessagesInBatch: proto.Int32(3)}
	batch, err := wire.AppendEntry(nil, bmd, body)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(batch)
	f.Add(good[:len(good)/2])
	f.Add([]byte{0x0e, 0x01, 0, 0, 0, 0, 0, 0, 0, 1, 0})
	info := TopicInfo{Schema: schema.Schema{Type: schema.JSON, Data: []byte(ordersSchema)}}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := newMemSource()
		src.topics["public/default/t"] = &memTopic{info: info,
			parts: map[int][]Ledger{-1: {{ID: 1, Entries: 1, Size: int64(len(data))}}},
			data:  map[int]map[[2]int64][]byte{-1: {{1, 0}: data}}}
		s, err := New(Options{Config: config.DefaultSQLConfig(), Source: src})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for i, q := range []string{"SELECT id, item, __key__ FROM `public/default`.t", "SELECT count(*) FROM `public/default`.t WHERE __publish_time__ > '2020-01-01'"} {
			ctx := gms.NewContext(context.Background(), gms.WithSession(gms.NewBaseSession()))
			_, it, _, err := s.Engine().Query(ctx, q)
			if err != nil {
				continue
			}
			rows, err := gms.RowIterToRows(ctx, it)
			if i == 0 && bytes.Equal(data, good) && (err != nil || len(rows) != 1 || rows[0][0] != int64(1) || rows[0][1] != "x") {
				t.Fatalf("the well-formed entry read %v, %v", rows, err)
			}
		}
	})
}
