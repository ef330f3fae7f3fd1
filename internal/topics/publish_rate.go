package topics

import (
	"sync"
	"time"
)

// Publish rate limiting (the publishRate topic policy, the namespace's publishMaxMessageRate
// for this cluster, the broker's maxPublishRatePerTopicInMessages / InBytes). As in Pulsar,
// a topic over its rate does not refuse messages: the front end stops reading from the
// producer's connection until the current one-second window ends (TCP pushes back), so the
// rate is kept over each window and nothing is dropped.

// publishRate counts a topic's publishes per one-second window.
type publishRate struct {
	mu               sync.Mutex
	maxMsgs, maxByte int64 // <= 0: unlimited
	msgs, bytes      int64 // used in the window starting at start
	start            time.Time
	now              func() time.Time // time.Now; tests move it
}

// set changes the limits (<= 0: unlimited).
func (r *publishRate) set(msgs, bytes int64) {
	r.mu.Lock()
	r.maxMsgs, r.maxByte = msgs, bytes
	r.mu.Unlock()
}

// take records n messages of size bytes and returns how long the publisher should pause
// before sending more (0: not over the rate).
func (r *publishRate) take(n, size int64) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.maxMsgs <= 0 && r.maxByte <= 0 {
		return 0
	}
	now := time.Now()
	if r.now != nil {
		now = r.now()
	}
	if now.Sub(r.start) >= time.Second || now.Before(r.start) {
		r.start, r.msgs, r.bytes = now, 0, 0
	}
	r.msgs += n
	r.bytes += size
	if (r.maxMsgs > 0 && r.msgs >= r.maxMsgs) || (r.maxByte > 0 && r.bytes >= r.maxByte) {
		return r.start.Add(time.Second).Sub(now)
	}
	return 0
}

// PublishThrottle records a published entry of n messages and size bytes and tells how
// long the front end should stop reading from the producer's connection to keep the
// topic's publish rate (0: no pause).
func (t *Topic) PublishThrottle(n, size int) time.Duration {
	return t.pol.pubRate.take(int64(max(n, 1)), int64(size))
}
