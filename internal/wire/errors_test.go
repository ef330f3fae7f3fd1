package wire

import (
	"errors"
	"fmt"
	"testing"

	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

type codedErr struct{}

func (codedErr) Error() string               { return "coded" }
func (codedErr) ServerError() pb.ServerError { return pb.ServerError_TooManyRequests }

func TestServerErrorFor(t *testing.T) {
	for _, tc := range []struct {
		err       error
		code      pb.ServerError
		retriable bool
	}{
		{fmt.Errorf("%w: persistent://a/b/c", ErrTopicNotFound), pb.ServerError_TopicNotFound, false},
		{fmt.Errorf("create: %w", ErrProducerBusy), pb.ServerError_ProducerBusy, true},
		{ErrMessageTooLarge, pb.ServerError_NotAllowedError, false},
		{fmt.Errorf("x: %w", ErrChecksum), pb.ServerError_ChecksumError, true},
		{fmt.Errorf("%w: %w", ErrPersistence, errors.New("bookie down")), pb.ServerError_PersistenceError, true},
		{fmt.Errorf("wrapped: %w", codedErr{}), pb.ServerError_TooManyRequests, true},
		{errors.New("something else"), pb.ServerError_UnknownError, true},
	} {
		code, retriable := ServerErrorFor(tc.err)
		if code != tc.code || retriable != tc.retriable {
			t.Errorf("%v: got %s/%v, want %s/%v", tc.err, code, retriable, tc.code, tc.retriable)
		}
	}
}

func TestErrorTableIsConsistent(t *testing.T) {
	seen := map[error]bool{}
	for _, row := range errorTable {
		if seen[row.err] {
			t.Errorf("%v listed twice", row.err)
		}
		seen[row.err] = true
		if code, _ := ServerErrorFor(row.err); code != row.code {
			t.Errorf("%v maps to %s, table says %s (shadowed by an earlier row)", row.err, code, row.code)
		}
		if ErrorFor(row.code) == nil {
			t.Errorf("no reverse mapping for %s", row.code)
		}
	}
	// The max frame must leave room for a max-size message plus its headers.
	if DefaultMaxFrameSize <= DefaultMaxMessageSize {
		t.Error("DefaultMaxFrameSize must exceed DefaultMaxMessageSize")
	}
}
