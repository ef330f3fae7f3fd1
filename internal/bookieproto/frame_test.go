package bookieproto

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"slices"
	"testing"
	"testing/iotest"
)

func sampleRequests() []Request {
	return []Request{
		{Op: OpAddEntry, Flags: FlagRecovery, RequestID: 1, LedgerID: 7, EntryID: 3, LAC: 2, MasterKey: []byte("pw"), Payload: []byte("hello")},
		{Op: OpAddEntry, RequestID: 2, LedgerID: 7, EntryID: 0, LAC: -1, MasterKey: []byte{}, Payload: []byte{}},
		{Op: OpReadEntry, Flags: FlagFence, RequestID: 3, LedgerID: 1 << 40, EntryID: 9, MasterKey: []byte("k")},
		{Op: OpReadRange, RequestID: 4, LedgerID: 5, EntryID: 1, LastID: 100, MaxBytes: 1 << 20},
		{Op: OpReadLAC, Flags: FlagFence, RequestID: 5, LedgerID: 5, MasterKey: []byte("key")},
		{Op: OpWaitLAC, RequestID: 6, LedgerID: 5, LAC: 41, TimeoutMs: 3000},
		{Op: OpDelete, RequestID: 1<<64 - 1, LedgerID: 5},
	}
}

func sampleResponses() []Response {
	return []Response{
		{Op: OpAddEntry, RequestID: 1, Status: StatusOK, LedgerID: 7, EntryID: 3},
		{Op: OpAddEntry, RequestID: 2, Status: StatusFenced, LedgerID: 7, EntryID: 4},
		{Op: OpReadEntry, RequestID: 3, LedgerID: 1, EntryID: 2, LAC: 1, Payload: []byte("data")},
		{Op: OpReadRange, RequestID: 4, LedgerID: 1, LAC: 3, Entries: []Entry{
			{LedgerID: 1, EntryID: 2, LAC: 3, Payload: []byte("a")},
			{LedgerID: 1, EntryID: 3, LAC: 3, Payload: []byte{}},
		}},
		{Op: OpReadRange, RequestID: 5, Status: StatusNoSuchEntry, LedgerID: 1, LAC: -1},
		{Op: OpReadLAC, RequestID: 6, LedgerID: 9, LAC: 77},
		{Op: OpWaitLAC, RequestID: 7, LedgerID: 9, LAC: 78},
		{Op: OpDelete, RequestID: 8, Status: StatusOK, LedgerID: 9},
	}
}

// normalize makes nil and empty slices compare equal.
func normReq(r Request) Request {
	if len(r.MasterKey) == 0 {
		r.MasterKey = nil
	}
	if len(r.Payload) == 0 {
		r.Payload = nil
	}
	return r
}

func normResp(r Response) Response {
	if len(r.Payload) == 0 {
		r.Payload = nil
	}
	if len(r.Entries) == 0 {
		r.Entries = nil
	}
	for i := range r.Entries {
		if len(r.Entries[i].Payload) == 0 {
			r.Entries[i].Payload = nil
		}
	}
	return r
}

func TestRequestRoundTrip(t *testing.T) {
	for _, want := range sampleRequests() {
		t.Run(want.Op.String(), func(t *testing.T) {
			b := AppendRequest(nil, &want)
			if len(b) != RequestSize(&want) {
				t.Fatalf("RequestSize %d, encoded %d", RequestSize(&want), len(b))
			}
			frame, err := ReadFrame(bytes.NewReader(b), DefaultMaxFrameSize)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeRequest(frame)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normReq(got), normReq(want)) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestResponseRoundTrip(t *testing.T) {
	for _, want := range sampleResponses() {
		t.Run(want.Op.String(), func(t *testing.T) {
			b := AppendResponse(nil, &want)
			if len(b) != ResponseSize(&want) {
				t.Fatalf("ResponseSize %d, encoded %d", ResponseSize(&want), len(b))
			}
			frame, err := ReadFrame(bytes.NewReader(b), DefaultMaxFrameSize)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeResponse(frame)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normResp(got), normResp(want)) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestMalformedFrames(t *testing.T) {
	add := AppendRequest(nil, &sampleRequests()[0])
	withLen := func(n uint32, rest []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, n), rest...)
	}
	cases := []struct {
		name  string
		bytes []byte
		want  error
	}{
		{"too large", withLen(DefaultMaxFrameSize+1, nil), ErrFrameTooLarge},
		{"shorter than header", withLen(3, []byte{1, 1, 0}), ErrMalformed},
		{"bad version", func() []byte { b := bytes.Clone(add); b[4] = 9; return b }(), ErrMalformed},
		{"unknown flag", func() []byte { b := bytes.Clone(add); b[7] |= 0x80; return b }(), ErrMalformed},
		{"response as request", func() []byte { b := bytes.Clone(add); b[5] |= byte(ResponseBit); return b }(), ErrMalformed},
		{"unknown op", func() []byte { b := bytes.Clone(add); b[5] = 60; return b }(), ErrUnknownOp},
		{"truncated body", func() []byte {
			r := Request{Op: OpReadRange, LedgerID: 1}
			b := AppendRequest(nil, &r)
			b = b[:len(b)-2]
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			return b
		}(), ErrMalformed},
		{"trailing bytes", func() []byte {
			r := Request{Op: OpDelete, LedgerID: 1}
			b := append(AppendRequest(nil, &r), 0)
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			return b
		}(), ErrMalformed},
		{"huge key", func() []byte {
			r := Request{Op: OpReadLAC, LedgerID: 1, MasterKey: make([]byte, MaxMasterKeySize+1)}
			return AppendRequest(nil, &r)
		}(), ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			frame, err := ReadFrame(bytes.NewReader(tc.bytes), DefaultMaxFrameSize)
			if err == nil {
				_, err = DecodeRequest(frame)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := ReadFrame(bytes.NewReader(add[:len(add)-1]), DefaultMaxFrameSize); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut frame: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(nil), DefaultMaxFrameSize); !errors.Is(err, io.EOF) {
		t.Fatalf("empty stream: %v", err)
	}
}

func TestResponseRangeCountLie(t *testing.T) {
	r := Response{Op: OpReadRange, LedgerID: 1}
	b := AppendResponse(nil, &r)
	binary.BigEndian.PutUint32(b[len(b)-4:], 1<<31) // count with nothing behind it
	if _, err := DecodeResponse(b[4:]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v", err)
	}
}

func TestStatusTable(t *testing.T) {
	for _, e := range statusTable {
		if got := e.status.Err(); !errors.Is(got, e.err) {
			t.Errorf("%d.Err() = %v, want %v", e.status, got, e.err)
		}
		if got := StatusOf(errors.Join(errors.New("ctx"), e.err)); got != e.status {
			t.Errorf("StatusOf(%v) = %d, want %d", e.err, got, e.status)
		}
	}
	if StatusOf(nil) != StatusOK || StatusOK.Err() != nil {
		t.Error("OK does not round-trip")
	}
	if StatusOf(errors.New("other")) != StatusServerError || !errors.Is(Status(999).Err(), ErrServer) {
		t.Error("unknown errors and codes must map to the internal-error code")
	}
	if !Retriable(ErrTimeout) || Retriable(ErrFenced) || !Retriable(ErrTooBusy) {
		t.Error("retriable flags")
	}
}

// decodeStream reads every frame of stream through r and decodes each as a request and as a
// response, returning what it saw; used to check that split reads change nothing.
func decodeStream(r io.Reader, maxFrame int) (out []string) {
	for {
		frame, err := ReadFrame(r, maxFrame)
		if err != nil {
			return append(out, "end:"+errClass(err))
		}
		if req, err := DecodeRequest(frame); err == nil {
			// Encoding a decoded request must give back the same bytes.
			if re := AppendRequest(nil, &req); !bytes.Equal(re[4:], frame) {
				panic("request re-encoding differs")
			}
			out = append(out, "req")
		} else {
			out = append(out, "req-err:"+errClass(err))
		}
		if resp, err := DecodeResponse(frame); err == nil {
			if re := AppendResponse(nil, &resp); !bytes.Equal(re[4:], frame) {
				panic("response re-encoding differs")
			}
			out = append(out, "resp")
		} else {
			out = append(out, "resp-err:"+errClass(err))
		}
	}
}

func errClass(err error) string {
	for _, e := range []error{io.EOF, io.ErrUnexpectedEOF, ErrFrameTooLarge, ErrUnknownOp, ErrMalformed} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return "other:" + err.Error()
}

// FuzzFrameDecoder feeds arbitrary bytes to the frame reader and both decoders, whole and
// split into one-byte and uneven reads: it must never panic, must classify every failure as
// one of the package's errors, must decode the same way however the bytes arrive, and must
// re-encode anything it accepts to the identical bytes.
func FuzzFrameDecoder(f *testing.F) {
	var stream []byte
	for _, r := range sampleRequests() {
		f.Add(AppendRequest(nil, &r), uint8(3))
		stream = AppendRequest(stream, &r)
	}
	for _, r := range sampleResponses() {
		f.Add(AppendResponse(nil, &r), uint8(5))
		stream = AppendResponse(stream, &r)
	}
	f.Add(stream, uint8(1))
	f.Add([]byte{0, 0, 0, 12, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, uint8(2))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		const maxFrame = 64 << 10
		whole := decodeStream(bytes.NewReader(data), maxFrame)
		for _, got := range [][]string{
			decodeStream(iotest.OneByteReader(bytes.NewReader(data)), maxFrame),
			decodeStream(&unevenReader{data: data, step: int(split%13) + 1}, maxFrame),
			// bufio.Reader takes the Peek path for the length prefix.
			decodeStream(bufio.NewReaderSize(&unevenReader{data: data, step: int(split%7) + 1}, 16), maxFrame),
		} {
			if !reflect.DeepEqual(got, whole) {
				t.Fatalf("split reads decoded differently:\n%v\n%v", got, whole)
			}
		}
		for _, s := range whole {
			if bytes.Contains([]byte(s), []byte("other:")) {
				t.Fatalf("unclassified error %s", s)
			}
		}
	})
}

// unevenReader returns reads of varying sizes 1..step+2.
type unevenReader struct {
	data []byte
	step int
	n    int
}

func (u *unevenReader) Read(p []byte) (int, error) {
	if len(u.data) == 0 {
		return 0, io.EOF
	}
	u.n++
	k := min(len(p), len(u.data), 1+(u.n*u.step)%(u.step+2))
	copy(p, u.data[:k])
	u.data = u.data[k:]
	return k, nil
}

// TestWireFormatPinned pins the bytes of one request and one response: a change here is a
// wire-format change and needs a new ProtocolVersion (doc.go, "Version history").
func TestWireFormatPinned(t *testing.T) {
	add := Request{Op: OpAddEntry, Flags: FlagRecovery, RequestID: 0x0102, LedgerID: 7, EntryID: 3, LAC: 2, MasterKey: []byte("k"), Payload: []byte("hi")}
	wantAdd := "00000029" + // length 41
		"01" + "01" + "0002" + "0000000000000102" + // version, ADD_ENTRY, RECOVERY, request id
		"0000000000000007" + "0000000000000003" + "0000000000000002" + // ledger, entry, lac
		"0001" + "6b" + "6869" // key length, key, payload
	if got := hex.EncodeToString(AppendRequest(nil, &add)); got != wantAdd {
		t.Errorf("add request\n got %s\nwant %s", got, wantAdd)
	}
	read := Response{Op: OpReadEntry, RequestID: 9, Status: StatusCorrupt, LedgerID: 7, EntryID: 3, LAC: 2}
	wantRead := "00000026" + // length 38
		"01" + "82" + "0000" + "0000000000000009" + // version, READ_ENTRY|response, flags, id
		"0006" + "0000000000000007" + "0000000000000003" + "0000000000000002" // status, ledger, entry, lac
	if got := hex.EncodeToString(AppendResponse(nil, &read)); got != wantRead {
		t.Errorf("read response\n got %s\nwant %s", got, wantRead)
	}
}

// TestAppendRequestHead checks that a head followed by the payload is the frame
// AppendRequest writes, for an add and for an op without a payload.
func TestAppendRequestHead(t *testing.T) {
	for _, r := range []Request{
		{Op: OpAddEntry, RequestID: 9, LedgerID: 3, EntryID: 4, LAC: 2, MasterKey: []byte("k"), Payload: bytes.Repeat([]byte("p"), 5000)},
		{Op: OpAddEntry, RequestID: 9, LedgerID: 3, EntryID: 4, LAC: 2, MasterKey: []byte("k"), Prefix: []byte("digest"), Payload: bytes.Repeat([]byte("p"), 5000)},
		{Op: OpReadEntry, RequestID: 10, LedgerID: 3, EntryID: 4, MasterKey: []byte("k")},
	} {
		want := AppendRequest(nil, &r)
		if r.Prefix != nil {
			// On the wire a prefix is just the start of the payload.
			q := r
			q.Prefix, q.Payload = nil, append(slices.Clone(r.Prefix), r.Payload...)
			if !bytes.Equal(want, AppendRequest(nil, &q)) {
				t.Fatal("Prefix+Payload encodes differently from the joined payload")
			}
		}
		got := AppendRequestHead(nil, &r)
		if r.Op == OpAddEntry {
			got = append(got, r.Payload...)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%v: head+payload differs from AppendRequest", r.Op)
		}
	}
}

// TestWriteResponseMatchesAppend checks that the streaming encoder writes the bytes
// AppendResponse builds, with small and large payloads and through a small bufio buffer.
func TestWriteResponseMatchesAppend(t *testing.T) {
	big, small := bytes.Repeat([]byte("B"), 70_000), []byte("small")
	for _, r := range []Response{
		{Op: OpAddEntry, RequestID: 1, LedgerID: 2, EntryID: 3},
		{Op: OpReadEntry, RequestID: 2, LedgerID: 2, EntryID: 3, LAC: 4, Payload: big},
		{Op: OpReadEntry, RequestID: 3, LedgerID: 2, EntryID: 3, LAC: 4, Payload: small},
		{Op: OpReadRange, RequestID: 4, LedgerID: 2, LAC: 9, Entries: []Entry{
			{EntryID: 1, Payload: small}, {EntryID: 2, Payload: big}, {EntryID: 3, Payload: small}, {EntryID: 4, Payload: big}}},
		{Op: OpReadRange, RequestID: 5, LedgerID: 2, LAC: 9},
		{Op: OpReadLAC, RequestID: 6, LedgerID: 2, LAC: 9},
	} {
		want := AppendResponse(nil, &r)
		var out bytes.Buffer
		bw := bufio.NewWriterSize(&out, 4096)
		if _, err := WriteResponse(bw, make([]byte, 0, 8), &r); err != nil {
			t.Fatal(err)
		}
		if err := bw.Flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("request %d: WriteResponse differs from AppendResponse", r.RequestID)
		}
	}
}
