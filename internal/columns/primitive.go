package columns

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/magnetar-io/magnetar/internal/schema"
)

// Primitive schemas have one column, __value__, encoded as Pulsar's schemas write them:
// numbers big-endian, FLOAT/DOUBLE as IEEE 754 bits, DATE/TIME/TIMESTAMP as milliseconds
// (8 bytes), INSTANT as seconds (8) + nanoseconds (4), LOCAL_DATE as the epoch day (8),
// LOCAL_TIME as nanoseconds of the day (8), LOCAL_DATE_TIME as both (16). STRING is UTF-8;
// BYTES, NONE and PROTOBUF (whose descriptor the registry does not hold) are the raw bytes.
type primitiveFormat struct{ t schema.Type }

var primitiveKinds = map[schema.Type]Kind{
	schema.String: String, schema.Boolean: Bool, schema.Int8: Int32, schema.Int16: Int32,
	schema.Int32: Int32, schema.Int64: Int64, schema.Float: Float32, schema.Double: Float64,
	schema.Date: Timestamp, schema.Time: Time, schema.Timestamp: Timestamp, schema.Instant: Timestamp,
	schema.LocalDate: Date, schema.LocalTime: Time, schema.LocalDateTime: Timestamp,
}

func newPrimitiveFormat(t schema.Type) (format, []Column, error) {
	k, ok := primitiveKinds[t]
	if !ok {
		k = Bytes
	}
	return primitiveFormat{t: t}, []Column{{Name: ColValue, Kind: k, Nullable: true, path: []string{ColValue}}}, nil
}

type primitiveDecoder struct {
	t    schema.Type
	slot int
	col  Column
}

func (f primitiveFormat) decoder(writer schema.Schema, cols []Column, slots []int) (payloadDecoder, error) {
	t := f.t
	if len(writer.Data) > 0 || writer.Type != 0 {
		t = writer.Type
	}
	if len(cols) == 0 {
		return noDecoder{}, nil
	}
	return primitiveDecoder{t: t, slot: slots[0], col: cols[0]}, nil
}

type noDecoder struct{}

func (noDecoder) decode([]byte, []any) error { return nil }

func (d primitiveDecoder) decode(p []byte, dst []any) error {
	v, err := decodePrimitive(d.t, p)
	if err != nil {
		return err
	}
	dst[d.slot] = coerce(v, d.col)
	return nil
}

func decodePrimitive(t schema.Type, p []byte) (any, error) {
	need := func(n int) error {
		if len(p) != n {
			return fmt.Errorf("%w: %s value of %d bytes, want %d", ErrMalformed, t, len(p), n)
		}
		return nil
	}
	switch t {
	case schema.String:
		return string(p), nil
	case schema.Boolean:
		if err := need(1); err != nil {
			return nil, err
		}
		return p[0] != 0, nil
	case schema.Int8:
		if err := need(1); err != nil {
			return nil, err
		}
		return int32(int8(p[0])), nil
	case schema.Int16:
		if err := need(2); err != nil {
			return nil, err
		}
		return int32(int16(binary.BigEndian.Uint16(p))), nil
	case schema.Int32:
		if err := need(4); err != nil {
			return nil, err
		}
		return int32(binary.BigEndian.Uint32(p)), nil
	case schema.Int64:
		if err := need(8); err != nil {
			return nil, err
		}
		return int64(binary.BigEndian.Uint64(p)), nil
	case schema.Float:
		if err := need(4); err != nil {
			return nil, err
		}
		return math.Float32frombits(binary.BigEndian.Uint32(p)), nil
	case schema.Double:
		if err := need(8); err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.BigEndian.Uint64(p)), nil
	case schema.Date, schema.Timestamp:
		if err := need(8); err != nil {
			return nil, err
		}
		return time.UnixMilli(int64(binary.BigEndian.Uint64(p))).UTC(), nil
	case schema.Time:
		if err := need(8); err != nil {
			return nil, err
		}
		return time.Duration(int64(binary.BigEndian.Uint64(p))) * time.Millisecond, nil
	case schema.Instant:
		if err := need(12); err != nil {
			return nil, err
		}
		return time.Unix(int64(binary.BigEndian.Uint64(p)), int64(int32(binary.BigEndian.Uint32(p[8:])))).UTC(), nil
	case schema.LocalDate:
		if err := need(8); err != nil {
			return nil, err
		}
		return time.Unix(int64(binary.BigEndian.Uint64(p))*86400, 0).UTC(), nil
	case schema.LocalTime:
		if err := need(8); err != nil {
			return nil, err
		}
		return time.Duration(int64(binary.BigEndian.Uint64(p))), nil
	case schema.LocalDateTime:
		if err := need(16); err != nil {
			return nil, err
		}
		day := int64(binary.BigEndian.Uint64(p))
		nanos := int64(binary.BigEndian.Uint64(p[8:]))
		return time.Unix(day*86400, nanos).UTC(), nil
	}
	return append([]byte(nil), p...), nil
}
