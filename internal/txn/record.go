package txn

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// Coordinator log records (format in doc.go, "Coordinator log").

// recordKind is the first field of a coordinator log record after its version.
type recordKind byte

const (
	recNew           recordKind = 1
	recPartitions    recordKind = 2
	recSubscriptions recordKind = 3
	recStatus        recordKind = 4
)

const (
	recordVersion = 1
	// maxNameLen bounds a topic or subscription name in a record (Pulsar's names are far
	// shorter; the bound keeps a corrupt length from allocating).
	maxNameLen = 64 << 10
	// MaxParticipants bounds the partitions plus subscriptions of one transaction: the
	// coordinator keeps them in memory and calls each when the transaction ends.
	MaxParticipants = 10_000
	flagTimedOut    = 1
)

// record is one decoded coordinator log record.
type record struct {
	kind  recordKind
	least uint64
	// recNew
	timeout time.Duration
	opened  time.Time
	owner   string
	// recPartitions
	partitions []string
	// recSubscriptions
	subs []Subscription
	// recStatus
	status   Status
	timedOut bool
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// encodeRecord is the bytes of r.
func encodeRecord(r *record) []byte {
	b := make([]byte, 0, 32)
	b = append(b, recordVersion, byte(r.kind))
	b = binary.AppendUvarint(b, r.least)
	switch r.kind {
	case recNew:
		b = binary.AppendUvarint(b, uint64(r.timeout.Milliseconds()))
		b = binary.AppendVarint(b, r.opened.UnixMilli())
		b = appendStr(b, r.owner)
	case recPartitions:
		b = binary.AppendUvarint(b, uint64(len(r.partitions)))
		for _, p := range r.partitions {
			b = appendStr(b, p)
		}
	case recSubscriptions:
		b = binary.AppendUvarint(b, uint64(len(r.subs)))
		for _, s := range r.subs {
			b = appendStr(appendStr(b, s.Topic), s.Name)
		}
	case recStatus:
		var f byte
		if r.timedOut {
			f |= flagTimedOut
		}
		b = append(b, byte(r.status), f)
	}
	return b
}

// reader decodes the primitive fields of the formats in doc.go; the first failure sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrCorrupt, what)
	}
}

func (r *reader) byte1(what string) byte {
	if r.err != nil || len(r.b) < 1 {
		r.fail(what)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) str(what string) string {
	n := r.uvarint(what)
	if r.err != nil {
		return ""
	}
	if n > maxNameLen || n > uint64(len(r.b)) {
		r.fail(what)
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// count reads a list length of at most max, each element at least minSize bytes (so a
// corrupt count cannot allocate more than the record holds).
func (r *reader) count(what string, max, minSize int) int {
	n := r.uvarint(what)
	if r.err != nil {
		return 0
	}
	if n > uint64(max) || n*uint64(minSize) > uint64(len(r.b)) {
		r.fail(what)
		return 0
	}
	return int(n)
}

func (r *reader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing bytes")
	}
	return r.err
}

// decodeRecord parses one coordinator log record.
func decodeRecord(b []byte) (*record, error) {
	r := &reader{b: b}
	if v := r.byte1("version"); r.err == nil && v != recordVersion {
		return nil, fmt.Errorf("%w: coordinator record version %d", ErrCorrupt, v)
	}
	rec := &record{kind: recordKind(r.byte1("kind"))}
	rec.least = r.uvarint("sequence")
	switch rec.kind {
	case recNew:
		ms := r.uvarint("timeout")
		if ms > uint64(1<<62)/uint64(time.Millisecond) {
			r.fail("timeout")
		}
		rec.timeout = time.Duration(ms) * time.Millisecond
		rec.opened = time.UnixMilli(r.varint("opened"))
		rec.owner = r.str("owner")
	case recPartitions:
		n := r.count("partitions", MaxParticipants, 1)
		for i := 0; i < n && r.err == nil; i++ {
			rec.partitions = append(rec.partitions, r.str("partition"))
		}
	case recSubscriptions:
		n := r.count("subscriptions", MaxParticipants, 2)
		for i := 0; i < n && r.err == nil; i++ {
			rec.subs = append(rec.subs, Subscription{Topic: r.str("topic"), Name: r.str("subscription")})
		}
	case recStatus:
		rec.status = Status(r.byte1("status"))
		if rec.status < Committing || rec.status > Aborted {
			r.fail("status")
		}
		rec.timedOut = r.byte1("flags")&flagTimedOut != 0
	default:
		if r.err == nil {
			return nil, fmt.Errorf("%w: coordinator record kind %d", ErrCorrupt, rec.kind)
		}
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return rec, nil
}

// sortedKeys returns m's keys in increasing order (encodings are deterministic).
func sortedKeys(m map[uint64]uint64) []uint64 {
	ks := make([]uint64, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
