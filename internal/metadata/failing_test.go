package metadata_test

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// failingStore refuses new sessions while fail is set, like an unreachable store.
type failingStore struct {
	metadata.Store
	mu    sync.Mutex
	fail  bool
	tries int
	last  metadata.Session
}

var errDown = errors.New("store down")

func (s *failingStore) setFail(v bool) {
	s.mu.Lock()
	s.fail = v
	s.mu.Unlock()
}

func (s *failingStore) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tries
}

func (s *failingStore) NewSession(ctx context.Context, ttl time.Duration) (metadata.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		s.tries++
		return nil, errDown
	}
	sess, err := s.Store.NewSession(ctx, ttl)
	if err == nil {
		s.last = sess
	}
	return sess, err
}
