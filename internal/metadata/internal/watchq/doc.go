// Package watchq is the bounded event queue between a metadata watch source (the memstore's
// change log or an etcd watch stream) and the consumer's channel. Both Store implementations
// use it so that "current state first, then every change in order, and a consumer that falls
// too far behind is cut off" means exactly the same thing for each.
//
// The producer never blocks: Push appends to a slice under a mutex and a single goroutine
// feeds the output channel. The initial state is not counted against the limit (it is bounded
// by the store's size, and a large prefix would otherwise never be watchable); only changes
// that pile up behind a slow consumer are. When they exceed the limit the queue drops what it
// holds and closes the channel: the consumer sees the close, watches again and receives the
// current state, so nothing is silently lost.
package watchq
