// Package connect opens a metadata.Store from a metadata URL, the value of every role's
// --metadata-url:
//
//	etcd://h1:2379,h2:2379,h3:2379   an etcd cluster (or `magnetar metadata` members);
//	                                 a host without a port means port 2379
//	etcd://h1:2379?dialTimeout=10s&maxWatchBacklog=8192
//	                                 with client options
//	memory://name                    an in-memory store shared by everything in this process
//	                                 that opens the same name (tests and in-process clusters)
//
// Each Open of memory://name returns a separate handle on the shared data: closing it ends
// that handle's sessions and watches, as closing a client of a real store would, and the data
// stays for the other handles until the process exits.
package connect
