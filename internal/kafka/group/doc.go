// Package group is the Kafka group coordinator's membership state machine (the classic
// protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup), one per broker for the groups it
// coordinates. It holds no offsets: committed offsets live with the partitions they belong
// to, as durable Pulsar subscriptions (internal/kafka, offsets.go); this package only
// answers whether a commit's member and generation are current.
//
// # States (as Kafka's GroupCoordinator)
//
//	Empty --join--> PreparingRebalance --all joined / rebalance timeout--> CompletingRebalance
//	CompletingRebalance --leader's SyncGroup--> Stable
//	Stable / CompletingRebalance --join, leave, member expired--> PreparingRebalance
//	PreparingRebalance with no member left --> Empty
//	Empty --DeleteGroups--> Dead (removed)
//
// A rebalance completes when every member known at its start has rejoined, or when the
// longest rebalance timeout among them passes (the stragglers are removed). The first
// rebalance of an empty group waits groupInitialRebalanceDelayMs more (reset by each join,
// up to the rebalance timeout), so a consumer fleet starting together forms one generation
// rather than one per arrival. The leader is the first member to join; the protocol is the
// first of the leader's protocols every member supports.
//
// # Timers
//
// Each member has a session timer, reset by every heartbeat, join and sync; when it fires
// the member is removed and a rebalance starts. A member that joined but has not been told
// the result (a pending JoinGroup) is not expired while it waits. All state is under one
// mutex per group; replies are called without it, so a reply may block on a slow
// connection without stalling the group.
//
// # Static membership (KIP-345)
//
// A member with a group.instance.id keeps its place across restarts: a JoinGroup with a
// known instance id replaces the old member id without a rebalance when the group is
// Stable and the protocols are unchanged, and LeaveGroup by instance id removes it.
package group
