package broker

import (
	"fmt"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// refuseWaiters answers every WaitForExclusive producer still queued on a terminated topic
// with TopicTerminatedError on its PRODUCER request: the topic will never be granted, and
// the client is still waiting for that request's final answer (it ignored the first,
// producer_ready=false one), so the error fails its CreateProducer.
func (t *topic) refuseWaiters() {
	t.mu.Lock()
	waiters := t.waiters
	t.waiters = nil
	t.mu.Unlock()
	for _, w := range waiters {
		w.c.mu.Lock()
		if w.c.producers[w.id] == w {
			delete(w.c.producers, w.id)
		}
		w.c.mu.Unlock()
		w.c.sendError(w.rid, fmt.Errorf("%w: %s", wire.ErrTopicTerminated, t.full))
	}
}
