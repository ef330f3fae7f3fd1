package topics

import (
	"fmt"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// refuseWaiters refuses every WaitForExclusive producer still queued on a terminated topic
// (ErrTopicTerminated): the topic will never be granted to them. The Pulsar front end
// answers the PRODUCER request the client is still waiting on with the error.
func (t *Topic) refuseWaiters() {
	t.mu.Lock()
	waiters := t.waiters
	t.waiters = nil
	t.mu.Unlock()
	for _, w := range waiters {
		w.client.Refuse(fmt.Errorf("%w: %s", wire.ErrTopicTerminated, t.full))
	}
}
