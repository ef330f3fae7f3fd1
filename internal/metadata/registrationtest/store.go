package registrationtest

import (
	"context"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// recordingStore remembers the last session opened through it, so a test can expire the
// session a Registration uses without reaching into it.
type recordingStore struct {
	metadata.Store
	mu   sync.Mutex
	last metadata.Session
}

func (s *recordingStore) NewSession(ctx context.Context, ttl time.Duration) (metadata.Session, error) {
	sess, err := s.Store.NewSession(ctx, ttl)
	if err == nil {
		s.mu.Lock()
		s.last = sess
		s.mu.Unlock()
	}
	return sess, err
}

func (s *recordingStore) lastSession() metadata.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}
