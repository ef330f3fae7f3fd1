// Package topics is the topic service: topics, producers, subscriptions and their dispatch,
// independent of any wire protocol. Every front end works through it: the Pulsar binary
// protocol (internal/broker), admin REST (internal/admin), and the Kafka protocol, SQL,
// functions and lakehouse readers. Below it are the managed ledger (a topic's log), the
// schema registry, resources (metadata records) and bundle ownership. docs/ARCHITECTURE.md
// §6 is the reader's map of this API; docs/design/topics.md the detailed paths.
//
// # Shape
//
//	svc, _ := topics.New(topics.Options{Config: cfg, Store: st, Ledgers: factory})
//	t, _ := svc.Topic(ctx, name, topics.Load{Create: true})      // load (ownership checked), maybe create
//	p, _ := t.AddProducer(ctx, topics.ProducerSpec{...}, client) // access modes, admission, schema
//	m, _ := topics.BuildMessage(topics.MessageSpec{...})         // or a Pulsar entry with MetaOf(md)
//	p.Publish(m, done)                                           // dedup, durable append, receipts in order
//	c, _ := t.Subscribe(ctx, topics.ConsumerSpec{...}, client)   // cursor, dispatch by subscription type
//	c.Flow(n); c.Ack(ctx, ids, false); c.Redeliver(ps); c.Seek(ctx, &p, time.Time{}); c.Close()
//	r, _ := t.NewReader(ctx, topics.Earliest); r.Read(ctx, 100)  // read-only, no subscription
//	st := t.Stats()                                              // Pulsar's TopicStats JSON shape
//
// Lifecycle and admin operations take topic names (Service.CreateTopic, DeleteTopic,
// TerminateTopic, UnloadTopic, PartitionsFor, ListTopics, CreateSubscription, Skip,
// ResetSubscription, Peek, ...).
//
// A front end hands the service a client for each producer and consumer (ProducerClient,
// ConsumerClient): the service calls it to deliver messages, to say a consumer became active
// or was closed by the broker (unload, seek, deletion), or a waiting producer got the topic.
// Those calls may come with the topic's or subscription's lock held: they must queue their
// work (a frame to write) and never call back into the service synchronously.
//
// # Entries and their metadata
//
// An entry is the exact bytes a Pulsar producer sent from the 0x0e01 magic on, stored behind
// a broker entry metadata block holding its index (index.go; wire.AppendEntry builds one; BuildMessage does it for front ends that do not speak Pulsar). What dispatch
// needs from its metadata (message count, routing key, deliver-at and publish time: EntryMeta)
// is parsed once, when the entry is published (MetaOf) or first read from a bookie (the
// managed ledger's meta parser, ParseEntryMeta), and travels with the entry through the
// managed ledger's cache, so dispatch never parses an entry again.
//
// # Errors
//
// Errors wrap the protocol-neutral classes re-exported in errors.go (ErrTopicNotFound,
// ErrNotAllowed, ...); each front end translates them in its own single table (wire's for
// the Pulsar protocol, admin's errors.go for HTTP).
//
// # Hooks
//
//   - Authorization (issue 16): every call that acts for a client takes a context carrying
//     its principal (WithPrincipal); Options.Authorizer, when set, decides each action.
//   - Transactions (issue 17): Message.Txn and Consumer.AckTxn carry a transaction id; with
//     transactionCoordinatorEnabled off they are refused (ErrTransactionsDisabled),
//     otherwise each persistent topic's internal/txn.TopicState takes them (txn.go), and
//     EndTxnOnPartition / EndTxnOnSubscription end them.
//   - Ownership: Options.Ownership (internal/ownership in a cluster) is asked before a topic
//     loads; nil serves every topic (standalone).
package topics
