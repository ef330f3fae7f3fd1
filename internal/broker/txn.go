package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/txn"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Transactions on the Pulsar protocol (issue 17; docs/design/txn.md). The coordinators this
// broker serves (internal/txn.Coordinators: coordinator i belongs to the owner of partition
// i of txn.AssignTopic) answer TC_CLIENT_CONNECT, NEW_TXN, ADD_PARTITION_TO_TXN,
// ADD_SUBSCRIPTION_TO_TXN and END_TXN; the topic service answers END_TXN_ON_PARTITION and
// END_TXN_ON_SUBSCRIPTION for the topics it owns. A coordinator ends a transaction on a
// topic owned elsewhere through that broker's END_TXN_ON_* (txn_client.go).
//
// Transaction requests run off the read loop (each in its own goroutine, bounded per
// connection): an END_TXN waits for every participant, and the connection's producers and
// consumers must not wait behind it. Their answers are matched by request id.

// maxTxnRequestsPerConn bounds the transaction requests in flight on one connection; past
// it the read loop waits (TCP back-pressure), as for publishes.
const maxTxnRequestsPerConn = 1000

// startTxn creates the assign topic if it is missing and starts the coordinators
// (transactionCoordinatorEnabled).
func (s *Server) startTxn(reg prometheus.Registerer) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	n, err := s.topics.EnsureTxnSystem(ctx, s.cfg.Transaction.NumCoordinators)
	if err != nil {
		return fmt.Errorf("broker: transactions: %w", err)
	}
	own := s.topics.Ownership()
	tbClient := newTBClientStats(s.cfg.ClusterName, s.topics.DynamicConfig().TopicLevelMetrics) // txn_client_metrics.go
	o := txn.CoordinatorsOptions{
		Count: n, Ledgers: s.topics.TxnLedgers(), Participants: instrumented{participants{s}, tbClient},
		Config: s.cfg.Transaction, Logger: s.log,
	}
	if own != nil {
		o.Acquire = func(ctx context.Context, id uint64) error { return own.Acquire(ctx, txn.AssignPartition(id)) }
		o.Holds = func(id uint64) bool { return own.Holds(txn.AssignPartition(id)) }
	}
	if s.txn, err = txn.StartCoordinators(o); err != nil {
		return fmt.Errorf("broker: transactions: %w", err)
	}
	if s.txnPeers, err = newPeerPool(s); err != nil { // txn_client.go
		_ = s.txn.Close(ctx)
		return err
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{s.txn.Collector(s.cfg.ClusterName), tbClient} {
			if err := reg.Register(c); err != nil {
				_ = s.txn.Close(ctx)
				return fmt.Errorf("broker: transaction metrics: %w", err)
			}
		}
	}
	return nil
}

// recordAssignTopic creates the assign topic with transactions off too, as Pulsar's
// initialize-cluster-metadata does: a client that enables transactions then reaches
// TC_CLIENT_CONNECT and hears "Transactions are not enabled." (what the Go client's
// TestTransactionDisabled expects) instead of failing on a topic with no partitions.
func (s *Server) recordAssignTopic() {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := s.topics.EnsureTxnSystem(ctx, s.cfg.Transaction.NumCoordinators); err != nil {
		s.log.Warn("could not record the transaction coordinator assign topic", "err", err)
	}
}

// Coordinators are the transaction coordinators this broker serves (nil: transactions off).
func (s *Server) Coordinators() *txn.Coordinators { return s.txn }

// closeTxn stops the coordinators and the connections to other brokers.
func (s *Server) closeTxn(ctx context.Context) error {
	if s.txn == nil {
		return nil
	}
	err := s.txn.Close(ctx)
	s.txnPeers.close()
	return err
}

// handleTxn serves one transaction command off the read loop.
func (c *conn) handleTxn(cmd *pb.BaseCommand) {
	if c.s.txn == nil {
		// The Go client's TestTransactionDisabled expects exactly this text.
		c.sendError(txnRequestID(cmd), fmt.Errorf("%w: Transactions are not enabled.", wire.ErrTransactionsDisabled))
		return
	}
	select {
	case c.txnSlots <- struct{}{}:
	case <-c.ctx.Done():
		return
	}
	go func() {
		defer func() { <-c.txnSlots }()
		c.serveTxn(cmd)
	}()
}

func txnRequestID(cmd *pb.BaseCommand) uint64 {
	switch {
	case cmd.TcClientConnectRequest != nil:
		return cmd.GetTcClientConnectRequest().GetRequestId()
	case cmd.NewTxn != nil:
		return cmd.GetNewTxn().GetRequestId()
	case cmd.AddPartitionToTxn != nil:
		return cmd.GetAddPartitionToTxn().GetRequestId()
	case cmd.AddSubscriptionToTxn != nil:
		return cmd.GetAddSubscriptionToTxn().GetRequestId()
	case cmd.EndTxn != nil:
		return cmd.GetEndTxn().GetRequestId()
	case cmd.EndTxnOnPartition != nil:
		return cmd.GetEndTxnOnPartition().GetRequestId()
	case cmd.EndTxnOnSubscription != nil:
		return cmd.GetEndTxnOnSubscription().GetRequestId()
	}
	return 0
}

// txnErr is the (error, message) pair of a transaction response.
func txnErr(err error) (*pb.ServerError, *string) {
	if err == nil {
		return nil, nil
	}
	code, _ := wire.ServerErrorFor(err)
	return code.Enum(), proto.String(err.Error())
}

func (c *conn) serveTxn(cmd *pb.BaseCommand) {
	ctx, cancel := c.opContext()
	defer cancel()
	switch cmd.GetType() {
	case pb.BaseCommand_TC_CLIENT_CONNECT_REQUEST:
		r := cmd.GetTcClientConnectRequest()
		_, err := c.s.txn.Get(ctx, r.GetTcId())
		e, m := txnErr(err)
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_TC_CLIENT_CONNECT_RESPONSE.Enum(),
			TcClientConnectResponse: &pb.CommandTcClientConnectResponse{RequestId: r.RequestId, Error: e, Message: m}})
	case pb.BaseCommand_NEW_TXN:
		r := cmd.GetNewTxn()
		var id txn.ID
		co, err := c.s.txn.Get(ctx, r.GetTcId())
		if err == nil {
			// txn_ttl_seconds carries milliseconds (both official clients send them).
			id, err = co.New(ctx, time.Duration(r.GetTxnTtlSeconds())*time.Millisecond, topics.PrincipalFrom(ctx).Effective())
		}
		e, m := txnErr(err)
		resp := &pb.CommandNewTxnResponse{RequestId: r.RequestId, Error: e, Message: m}
		if err == nil {
			resp.TxnidMostBits, resp.TxnidLeastBits = proto.Uint64(id.Most), proto.Uint64(id.Least)
		}
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_NEW_TXN_RESPONSE.Enum(), NewTxnResponse: resp})
	case pb.BaseCommand_ADD_PARTITION_TO_TXN:
		r := cmd.GetAddPartitionToTxn()
		id := txn.ID{Most: r.GetTxnidMostBits(), Least: r.GetTxnidLeastBits()}
		err := c.withCoordinator(ctx, id, func(co *txn.Coordinator) error {
			for _, p := range r.GetPartitions() {
				if _, err := topics.ParseName(p); err != nil {
					return fmt.Errorf("%w: %q: %w", wire.ErrNotAllowed, p, err)
				}
			}
			return co.AddPartitions(ctx, id, r.GetPartitions())
		})
		e, m := txnErr(err)
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_ADD_PARTITION_TO_TXN_RESPONSE.Enum(),
			AddPartitionToTxnResponse: &pb.CommandAddPartitionToTxnResponse{RequestId: r.RequestId,
				TxnidMostBits: r.TxnidMostBits, TxnidLeastBits: r.TxnidLeastBits, Error: e, Message: m}})
	case pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN:
		r := cmd.GetAddSubscriptionToTxn()
		id := txn.ID{Most: r.GetTxnidMostBits(), Least: r.GetTxnidLeastBits()}
		err := c.withCoordinator(ctx, id, func(co *txn.Coordinator) error {
			subs := make([]txn.Subscription, len(r.GetSubscription()))
			for i, sub := range r.GetSubscription() {
				if _, err := topics.ParseName(sub.GetTopic()); err != nil || sub.GetSubscription() == "" {
					return fmt.Errorf("%w: subscription %q on %q", wire.ErrNotAllowed, sub.GetSubscription(), sub.GetTopic())
				}
				subs[i] = txn.Subscription{Topic: sub.GetTopic(), Name: sub.GetSubscription()}
			}
			return co.AddSubscriptions(ctx, id, subs)
		})
		e, m := txnErr(err)
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN_RESPONSE.Enum(),
			AddSubscriptionToTxnResponse: &pb.CommandAddSubscriptionToTxnResponse{RequestId: r.RequestId,
				TxnidMostBits: r.TxnidMostBits, TxnidLeastBits: r.TxnidLeastBits, Error: e, Message: m}})
	case pb.BaseCommand_END_TXN:
		r := cmd.GetEndTxn()
		id := txn.ID{Most: r.GetTxnidMostBits(), Least: r.GetTxnidLeastBits()}
		err := c.withCoordinator(ctx, id, func(co *txn.Coordinator) error {
			return co.End(ctx, id, txnAction(r.GetTxnAction()))
		})
		e, m := txnErr(err)
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_RESPONSE.Enum(),
			EndTxnResponse: &pb.CommandEndTxnResponse{RequestId: r.RequestId,
				TxnidMostBits: r.TxnidMostBits, TxnidLeastBits: r.TxnidLeastBits, Error: e, Message: m}})
	case pb.BaseCommand_END_TXN_ON_PARTITION:
		r := cmd.GetEndTxnOnPartition()
		id := txn.ID{Most: r.GetTxnidMostBits(), Least: r.GetTxnidLeastBits()}
		err := c.endOnPartition(ctx, r.GetTopic(), id, r.GetTxnAction(), r.GetTxnidLeastBitsOfLowWatermark())
		e, m := txnErr(err)
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_PARTITION_RESPONSE.Enum(),
			EndTxnOnPartitionResponse: &pb.CommandEndTxnOnPartitionResponse{RequestId: r.RequestId,
				TxnidMostBits: r.TxnidMostBits, TxnidLeastBits: r.TxnidLeastBits, Error: e, Message: m}})
	case pb.BaseCommand_END_TXN_ON_SUBSCRIPTION:
		r := cmd.GetEndTxnOnSubscription()
		id := txn.ID{Most: r.GetTxnidMostBits(), Least: r.GetTxnidLeastBits()}
		err := c.endOnSubscription(ctx, r.GetSubscription(), id, r.GetTxnAction(), r.GetTxnidLeastBitsOfLowWatermark())
		e, m := txnErr(err)
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_SUBSCRIPTION_RESPONSE.Enum(),
			EndTxnOnSubscriptionResponse: &pb.CommandEndTxnOnSubscriptionResponse{RequestId: r.RequestId,
				TxnidMostBits: r.TxnidMostBits, TxnidLeastBits: r.TxnidLeastBits, Error: e, Message: m}})
	}
}

// withCoordinator runs f with the coordinator of id (its most significant bits), for the
// transaction's owner only.
func (c *conn) withCoordinator(ctx context.Context, id txn.ID, f func(*txn.Coordinator) error) error {
	co, err := c.s.txn.Get(ctx, id.Most)
	if err != nil {
		return err
	}
	// With authentication, a transaction is the role's that opened it (Pulsar's
	// verifyTxnOwnership, without its superuser exception: the broker has no authorizer).
	if c.s.authn.Enabled() {
		if m, ok := co.Get(id); ok && m.Owner != "" && m.Owner != topics.PrincipalFrom(ctx).Effective() {
			return fmt.Errorf("%w: transaction %s belongs to another role", wire.ErrAuthorization, id)
		}
	}
	return f(co)
}

func txnAction(a pb.TxnAction) txn.Action {
	if a == pb.TxnAction_ABORT {
		return txn.Abort
	}
	return txn.Commit
}

// endOnPartition and endOnSubscription serve another broker's coordinator (txn_client.go).
// Only a topic's admins may end transactions on it (superusers, which the brokers' own
// role must be, and the tenant's admins): anyone else could commit or abort any
// transaction of any client.
func (c *conn) endOnPartition(ctx context.Context, topic string, id txn.ID, a pb.TxnAction, low uint64) error {
	name, err := topics.ParseName(topic)
	if err != nil {
		return fmt.Errorf("%w: %q: %w", wire.ErrTopicNotFound, topic, err)
	}
	if err := c.s.topics.Authorize(ctx, topics.ActionAdmin, name); err != nil {
		return err
	}
	return c.s.topics.EndTxnOnPartition(ctx, name, id, a == pb.TxnAction_COMMIT, low)
}

func (c *conn) endOnSubscription(ctx context.Context, sub *pb.Subscription, id txn.ID, a pb.TxnAction, low uint64) error {
	name, err := topics.ParseName(sub.GetTopic())
	if err != nil {
		return fmt.Errorf("%w: %q: %w", wire.ErrTopicNotFound, sub.GetTopic(), err)
	}
	if err := c.s.topics.Authorize(ctx, topics.ActionAdmin, name); err != nil {
		return err
	}
	return c.s.topics.EndTxnOnSubscription(ctx, name, sub.GetSubscription(), id, a == pb.TxnAction_COMMIT, low)
}

// participants end transactions on topics: here when this broker owns the topic, else
// through its owner's END_TXN_ON_* (txn_client.go).
type participants struct{ s *Server }

// ownerURL is the broker URL serving topic, "" when it is this one.
func (p participants) ownerURL(ctx context.Context, topic string) (string, error) {
	own := p.s.topics.Ownership()
	if own == nil {
		return "", nil
	}
	r, err := own.Lookup(ctx, topic, true)
	if err != nil {
		return "", fmt.Errorf("%w: looking up %s: %w", wire.ErrServiceNotReady, topic, err)
	}
	if r.Self || r.BrokerURL == "" || r.BrokerURL == p.s.ServiceURL() || r.BrokerURL == p.s.ServiceURLTLS() {
		return "", nil
	}
	// brokerClientTlsEnabled: peers are reached on their TLS listener (a broker with TLS
	// listeners only registers that one as BrokerURL too).
	if p.s.cfg.Security.Client.TLSEnabled && r.BrokerURLTLS != "" {
		return r.BrokerURLTLS, nil
	}
	return r.BrokerURL, nil
}

func (p participants) EndPartition(ctx context.Context, topic string, id txn.ID, action txn.Action, low uint64) error {
	name, err := topics.ParseName(topic)
	if err != nil {
		return fmt.Errorf("%w: %q: %w", wire.ErrTopicNotFound, topic, err)
	}
	url, err := p.ownerURL(ctx, name.String())
	if err != nil || url == "" {
		if err != nil {
			return err
		}
		return p.s.topics.EndTxnOnPartition(ctx, name, id, action == txn.Commit, low)
	}
	a := pb.TxnAction_COMMIT
	if action == txn.Abort {
		a = pb.TxnAction_ABORT
	}
	return p.s.txnPeers.request(ctx, url, &pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_PARTITION.Enum(),
		EndTxnOnPartition: &pb.CommandEndTxnOnPartition{TxnidMostBits: proto.Uint64(id.Most), TxnidLeastBits: proto.Uint64(id.Least),
			Topic: proto.String(topic), TxnAction: a.Enum(), TxnidLeastBitsOfLowWatermark: proto.Uint64(low)}})
}

func (p participants) EndSubscription(ctx context.Context, sub txn.Subscription, id txn.ID, action txn.Action, low uint64) error {
	name, err := topics.ParseName(sub.Topic)
	if err != nil {
		return fmt.Errorf("%w: %q: %w", wire.ErrTopicNotFound, sub.Topic, err)
	}
	url, err := p.ownerURL(ctx, name.String())
	if err != nil || url == "" {
		if err != nil {
			return err
		}
		return p.s.topics.EndTxnOnSubscription(ctx, name, sub.Name, id, action == txn.Commit, low)
	}
	a := pb.TxnAction_COMMIT
	if action == txn.Abort {
		a = pb.TxnAction_ABORT
	}
	return p.s.txnPeers.request(ctx, url, &pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_SUBSCRIPTION.Enum(),
		EndTxnOnSubscription: &pb.CommandEndTxnOnSubscription{TxnidMostBits: proto.Uint64(id.Most), TxnidLeastBits: proto.Uint64(id.Least),
			Subscription: &pb.Subscription{Topic: proto.String(sub.Topic), Subscription: proto.String(sub.Name)},
			TxnAction:    a.Enum(), TxnidLeastBitsOfLowWatermark: proto.Uint64(low)}})
}

// errPeer marks a failure to reach another broker (retried by the coordinator).
var errPeer = errors.New("broker: peer broker unreachable")
