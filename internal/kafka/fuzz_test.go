package kafka

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzRequestDecoder feeds arbitrary request bodies through the connection's decoder and
// handlers on a memory backend: nothing may panic, and the only outcomes are a response or
// a closed connection.
func FuzzRequestDecoder(f *testing.F) {
	seed := func(r kmsg.Request, v int16) {
		r.SetVersion(v)
		var fm kmsg.RequestFormatter
		f.Add(fm.AppendRequest(nil, r, 7)[4:])
	}
	seed(kmsg.NewPtrApiVersionsRequest(), 3)
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
	seed(md, 12)
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks = -1
	pr.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: testBatch(f, 3)}}}}
	seed(pr, 9)
	fr := kmsg.NewPtrFetchRequest()
	fr.Topics = []kmsg.FetchRequestTopic{{Topic: "t", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
	seed(fr, 12)
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis = "g", "consumer", 10000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1}}}
	seed(jg, 9)
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "g", -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	seed(oc, 8)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "n", NumPartitions: 2, ReplicationFactor: 1}}
	seed(ct, 7)
	as := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	as.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "u", Mechanism: 1, Iterations: 4096, Salt: []byte("s"), SaltedPassword: make([]byte, 32)}}
	as.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "v", Mechanism: 2}}
	seed(as, 0)
	ds := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	ds.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "u"}, {Name: "u"}}
	seed(ds, 0)
	// Transactions (txn.go): on the memory backend they end at COORDINATOR_NOT_AVAILABLE,
	// after the handlers decoded and checked the request.
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("tx"), 60000
	seed(ip, 4)
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.TransactionalID, ap.ProducerID = "tx", 1000
	ap.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
	seed(ap, 3)
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.Group = "tx", 1000, "g"
	seed(ao, 3)
	to := kmsg.NewPtrTxnOffsetCommitRequest()
	to.TransactionalID, to.Group, to.ProducerID, to.Generation = "tx", "g", 1000, -1
	to.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}}}}
	seed(to, 3)
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.ProducerID, et.Commit = "tx", 1000, true
	seed(et, 4)
	tp := kmsg.NewPtrProduceRequest()
	tp.Acks, tp.TransactionID = -1, kmsg.StringPtr("tx")
	tp.Topics = pr.Topics
	seed(tp, 9)
	lt := kmsg.NewPtrListTransactionsRequest()
	lt.StateFilters, lt.ProducerIDFilters, lt.TransactionalIDPattern = []string{"Ongoing"}, []int64{7}, kmsg.StringPtr("tx.*")
	seed(lt, 2)
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"tx", "other"}
	seed(dt, 0)
	dp := kmsg.NewPtrDescribeProducersRequest()
	dp.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
	seed(dp, 0)
	wm := kmsg.NewPtrWriteTxnMarkersRequest()
	wm.Markers = []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 7, Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t", Partitions: []int32{0}}}}}
	seed(wm, 1)
	aq := kmsg.NewPtrAlterClientQuotasRequest()
	aq.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("u")}},
		Ops: []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1024}}}}
	seed(aq, 1)
	sh := kmsg.NewPtrSASLHandshakeRequest()
	sh.Mechanism = "SCRAM-SHA-256"
	seed(sh, 1)

	s, _, _ := startMem(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		a, b := net.Pipe()
		c := newConn(s, a)
		done := make(chan struct{})
		go func() { c.serve(); close(done) }()
		var frame []byte
		frame = binary.BigEndian.AppendUint32(frame, uint32(len(body)))
		frame = append(frame, body...)
		go func() { _, _ = b.Write(frame); time.Sleep(50 * time.Millisecond); _ = b.Close() }()
		var sink bytes.Buffer
		_, _ = sink.ReadFrom(b)
		<-done
	})
}

// FuzzRecordBatches checks the produce-side batch decoder and the conversion to a Pulsar
// entry and back on arbitrary bytes.
func FuzzRecordBatches(f *testing.F) {
	f.Add(testBatch(f, 1))
	f.Add(testBatch(f, 5))
	f.Fuzz(func(t *testing.T, raw []byte) {
		bs, err := parseBatches(raw, 1<<20)
		if err != nil {
			return
		}
		for i := range bs {
			e, err := toPulsarEntry(&bs[i], entryOptions{producerName: "p", publishTime: 1})
			if err != nil {
				continue
			}
			out, n, err := appendKafkaBatch(nil, e, 10)
			if err != nil || n != len(bs[i].records) {
				t.Fatalf("stored entry does not read back: %d records, %v", n, err)
			}
			if _, err := parseBatch(out, 1<<20); err != nil {
				t.Fatalf("fetched batch does not parse: %v", err)
			}
		}
	})
}

// testBatch is an uncompressed batch of n records, as a producer builds it.
func testBatch(tb testing.TB, n int) []byte {
	tb.Helper()
	var recs []byte
	for i := 0; i < n; i++ {
		recs = appendRecord(recs, int32(i), int64(i), []byte("k"), []byte("value"), nil)
	}
	b := make([]byte, batchHeaderSize)
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	b[16] = 2
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], 1000)
	binary.BigEndian.PutUint64(b[35:], 1000+uint64(n))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0))
	binary.BigEndian.PutUint16(b[51:], ^uint16(0))
	binary.BigEndian.PutUint32(b[53:], ^uint32(0))
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	binary.BigEndian.PutUint32(b[17:], crc32c32(b[21:]))
	return b
}
