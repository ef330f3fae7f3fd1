package kafka

import (
	"encoding/binary"
	"fmt"
)

// Request framing. Every request and response is a 4-byte big-endian size followed by that
// many bytes. A request starts with its header:
//
//	v1 (non-flexible versions): api_key i16, api_version i16, correlation_id i32,
//	                            client_id (i16 length, -1 null, bytes)
//	v2 (flexible versions):     the same, then tagged fields (uvarint count, then per
//	                            field uvarint tag, uvarint size, bytes)
//
// and a response with correlation_id i32, plus an empty tagged-field section (one 0 byte)
// for flexible versions, except ApiVersions, whose response header is always v0 so that a
// client that does not know the broker's versions can read it.

// requestHeader is a decoded request header; body is what follows it.
type requestHeader struct {
	key, version  int16
	correlationID int32
	clientID      string
}

// parseHeader decodes the fixed part of a request header. The tagged fields of a flexible
// header are skipped by skipHeaderTags once the version is known to be flexible.
func parseHeader(b []byte) (requestHeader, []byte, error) {
	if len(b) < 10 {
		return requestHeader{}, nil, fmt.Errorf("request of %d bytes is shorter than a header", len(b))
	}
	h := requestHeader{
		key:           int16(binary.BigEndian.Uint16(b)),
		version:       int16(binary.BigEndian.Uint16(b[2:])),
		correlationID: int32(binary.BigEndian.Uint32(b[4:])),
	}
	n := int(int16(binary.BigEndian.Uint16(b[8:])))
	b = b[10:]
	if n > 0 {
		if n > len(b) {
			return requestHeader{}, nil, fmt.Errorf("client id of %d bytes, %d left", n, len(b))
		}
		h.clientID = string(b[:n])
		b = b[n:]
	} else if n < -1 {
		return requestHeader{}, nil, fmt.Errorf("client id length %d", n)
	}
	return h, b, nil
}

// skipHeaderTags skips a flexible header's tagged fields.
func skipHeaderTags(b []byte) ([]byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 {
		return nil, fmt.Errorf("truncated header tag count")
	}
	b = b[w:]
	for i := uint64(0); i < n; i++ {
		_, w := binary.Uvarint(b)
		if w <= 0 {
			return nil, fmt.Errorf("truncated header tag")
		}
		b = b[w:]
		size, w := binary.Uvarint(b)
		if w <= 0 || size > uint64(len(b)-w) {
			return nil, fmt.Errorf("header tag of %d bytes, %d left", size, len(b)-max(w, 0))
		}
		b = b[uint64(w)+size:]
	}
	return b, nil
}

// appendResponseHeader starts a response frame in dst: a size placeholder, the correlation
// id and, for flexible non-ApiVersions responses, an empty tag section. finishFrame fills
// the size in.
func appendResponseHeader(dst []byte, correlationID int32, flexible bool) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if flexible {
		dst = append(dst, 0)
	}
	return dst
}

// finishFrame writes the size of the frame that starts at start.
func finishFrame(dst []byte, start int) []byte {
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
