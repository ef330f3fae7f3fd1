package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// topicRef is a topic named by a REST path: /admin/v2/{domain}/{tenant}/{namespace}/{topic}.
type topicRef struct {
	domain, tenant, ns, local string
}

func (t topicRef) String() string { return t.domain + "://" + t.tenant + "/" + t.ns + "/" + t.local }
func (t topicRef) partition(i int) string {
	return t.String() + "-partition-" + strconv.Itoa(i)
}

// registerTopics adds the topic and subscription endpoints for both domains. Routes use a
// literal domain so they never overlap the /admin/v2/namespaces|brokers|... routes.
func (s *server) registerTopics(mux *http.ServeMux) {
	mux.HandleFunc("GET /admin/v2/namespaces/{tenant}/{namespace}/topics", s.handle(s.namespaceTopics))
	mux.HandleFunc("PUT /admin/v2/namespaces/{tenant}/{namespace}/unload", s.handle(s.unloadNamespace))
	for _, d := range []string{"persistent", "non-persistent"} {
		ns := "/admin/v2/" + d + "/{tenant}/{namespace}"
		t := ns + "/{topic}"
		sub := t + "/subscription/{sub}"
		routes := []struct {
			pattern string
			f       handlerFunc
		}{
			{"GET " + ns, s.listTopics},
			{"GET " + ns + "/partitioned", s.listPartitioned},
			{"PUT " + t, s.createTopic},
			{"DELETE " + t, s.deleteTopic},
			{"PUT " + t + "/partitions", s.createPartitioned},
			{"POST " + t + "/partitions", s.updatePartitions},
			{"GET " + t + "/partitions", s.getPartitions},
			{"DELETE " + t + "/partitions", s.deletePartitioned},
			{"GET " + t + "/stats", s.topicStats},
			{"GET " + t + "/partitioned-stats", s.partitionedStats},
			{"GET " + t + "/internalStats", s.internalStats},
			{"GET " + t + "/partitioned-internalStats", s.partitionedInternalStats},
			{"PUT " + t + "/offload", s.triggerOffload},
			{"GET " + t + "/offload", s.offloadStatus},
			{"PUT " + t + "/compaction", s.triggerCompaction},
			{"GET " + t + "/compaction", s.compactionStatus},
			{"GET " + t + "/lastMessageId", s.lastMessageID},
			{"POST " + t + "/terminate", s.terminate},
			{"POST " + t + "/terminate/partitions", s.terminatePartitioned}, // partitions.go
			{"PUT " + t + "/unload", s.unload},
			{"GET " + t + "/properties", s.getProperties},
			{"PUT " + t + "/properties", s.putProperties},
			{"DELETE " + t + "/properties", s.deleteProperty},
			{"GET " + t + "/ledger/{ledger}/entry/{entry}", s.messageByID},
			{"GET " + t + "/messageid/{timestamp}", s.messageIDAt},
			{"GET " + t + "/examinemessage", s.examineMessage},
			{"GET " + t + "/subscriptions", s.listSubscriptions},
			{"POST " + t + "/all_subscription/expireMessages/{seconds}", s.expireAll},
			{"PUT " + sub, s.createSubscription},
			{"DELETE " + sub, s.deleteSubscription},
			{"POST " + sub + "/skip/{n}", s.skip},
			{"POST " + sub + "/skip_all", s.skipAll},
			{"POST " + sub + "/expireMessages/{seconds}", s.expire},
			{"POST " + sub + "/resetcursor", s.resetCursorToID},
			{"POST " + sub + "/resetcursor/{timestamp}", s.resetCursorToTime},
			{"GET " + sub + "/position/{k}", s.peek},
		}
		for _, rt := range routes {
			mux.HandleFunc(rt.pattern, s.handle(rt.f))
		}
	}
}

// domainOf takes the domain from the path (the routes' first segment after /admin/v2/).
func domainOf(r *http.Request) string {
	if strings.HasPrefix(r.URL.Path, "/admin/v2/non-persistent/") || strings.HasPrefix(r.URL.Path, "/topics/non-persistent/") {
		return "non-persistent"
	}
	return "persistent"
}

// topicOf parses the topic in the path and checks that its namespace exists, so an unknown
// tenant or namespace is a 404 naming it.
func (s *server) topicOf(ctx context.Context, r *http.Request) (topicRef, error) {
	t := topicRef{domain: domainOf(r), tenant: r.PathValue("tenant"), ns: r.PathValue("namespace"), local: r.PathValue("topic")}
	if err := s.checkNamespace(ctx, t.tenant, t.ns); err != nil {
		return t, err
	}
	if t.local == "" || strings.ContainsAny(t.local, "/\x00") || len(t.local) > 1024 {
		// An escaped "/" (%2F) would make a name with a different namespace.
		return t, fmt.Errorf("%w: invalid topic name %q", ErrBadRequest, t.local)
	}
	if s.broker == nil {
		return t, fmt.Errorf("%w: no broker in this process", ErrNotSupported)
	}
	return t, nil
}

func (s *server) checkNamespace(ctx context.Context, tenant, ns string) error {
	if _, err := s.res.Namespace(ctx, tenant, ns); err != nil {
		if errors.Is(err, resources.ErrNotFound) {
			return s.namespaceMissingErr(ctx, tenant, ns, err)
		}
		return err
	}
	return nil
}

// partitionsOf is the partition count of t, 0 if it is not partitioned.
func (s *server) partitionsOf(ctx context.Context, t topicRef) (int, error) {
	m, err := s.res.PartitionedTopic(ctx, t.domain, t.tenant, t.ns, t.local)
	if errors.Is(err, resources.ErrNotFound) {
		return 0, nil
	}
	return m.Partitions, err
}

// topicWithPartitions is the topic in the path and its partition count (0: not
// partitioned), the preamble of every route that treats a partitioned topic differently.
func (s *server) topicWithPartitions(ctx context.Context, r *http.Request) (topicRef, int, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return t, 0, err
	}
	n, err := s.partitionsOf(ctx, t)
	return t, n, err
}

func boolParam(r *http.Request, name string) bool {
	v, _ := strconv.ParseBool(r.URL.Query().Get(name))
	return v
}

func intPath(r *http.Request, name string) (int64, error) {
	n, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s must be an integer, got %q", ErrBadRequest, name, r.PathValue(name))
	}
	return n, nil
}

func (s *server) listTopics(ctx context.Context, r *http.Request) (any, error) {
	tenant, ns := r.PathValue("tenant"), r.PathValue("namespace")
	if err := s.checkNamespace(ctx, tenant, ns); err != nil {
		return nil, err
	}
	if s.broker == nil {
		return []string{}, nil
	}
	return s.broker.ListTopics(ctx, tenant+"/"+ns, domainOf(r))
}

// namespaceTopics lists a namespace's topics by mode (PERSISTENT, NON_PERSISTENT or ALL).
// Without a mode it lists the persistent ones, as Pulsar's @DefaultValue("PERSISTENT")
// does: the Go client's HTTP lookup service builds its URL with url.Parse(path).Path, so
// its "?mode=" never reaches the server.
func (s *server) namespaceTopics(ctx context.Context, r *http.Request) (any, error) {
	tenant, ns := r.PathValue("tenant"), r.PathValue("namespace")
	if err := s.checkNamespace(ctx, tenant, ns); err != nil {
		return nil, err
	}
	out := []string{}
	if s.broker == nil {
		return out, nil
	}
	mode := strings.ToUpper(r.URL.Query().Get("mode"))
	if mode == "" {
		mode = "PERSISTENT"
	}
	for _, d := range []string{"persistent", "non-persistent"} {
		if (mode == "PERSISTENT" && d != "persistent") || (mode == "NON_PERSISTENT" && d != "non-persistent") {
			continue
		}
		list, err := s.broker.ListTopics(ctx, tenant+"/"+ns, d)
		if err != nil {
			return nil, err
		}
		out = append(out, list...)
	}
	return out, nil
}

// forNamespaceTopics runs f on every persistent topic (partitions one by one) of the
// namespace in the path, or, when the path names a {bundle}, of that bundle only.
func (s *server) forNamespaceTopics(ctx context.Context, r *http.Request, f func(topic string) error) error {
	tenant, ns := r.PathValue("tenant"), r.PathValue("namespace")
	if err := s.checkNamespace(ctx, tenant, ns); err != nil {
		return err
	}
	if s.broker == nil {
		return fmt.Errorf("%w: no broker in this process", ErrNotSupported)
	}
	in, err := s.bundleFilter(ctx, r)
	if err != nil {
		return err
	}
	topics, err := s.broker.ListTopics(ctx, tenant+"/"+ns, "persistent")
	if err != nil {
		return err
	}
	for _, t := range topics {
		if !in(t) {
			continue
		}
		if err := f(t); err != nil && statusFor(err) != http.StatusNotFound {
			return err
		}
	}
	return nil
}

// bundleFilter tells whether a topic falls in the {bundle} of the path (every topic does
// when the path names none); a range that is not one of the namespace's bundles is 404.
func (s *server) bundleFilter(ctx context.Context, r *http.Request) (func(topic string) bool, error) {
	rng := strings.ToLower(r.PathValue("bundle"))
	if rng == "" {
		return func(string) bool { return true }, nil
	}
	ns, bounds, err := s.namespaceBounds(ctx, r)
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(bounds); i++ {
		if bundle := (resources.Bundle{Namespace: ns, Lower: bounds[i-1], Upper: bounds[i]}); bundle.Range() == rng {
			return func(topic string) bool { return bundle.Contains(resources.TopicHash(topic)) }, nil
		}
	}
	return nil, fmt.Errorf("%w: namespace %s has no bundle %s", resources.ErrNotFound, ns, r.PathValue("bundle"))
}

// unloadNamespace unloads every topic of the namespace (pulsar-admin namespaces unload).
func (s *server) unloadNamespace(ctx context.Context, r *http.Request) (any, error) {
	return nil, s.forNamespaceTopics(ctx, r, func(topic string) error { return s.broker.Unload(ctx, topic) })
}

// clearNamespaceBacklog skips every message of every subscription (or of the one named)
// of the namespace's (or bundle's) topics (pulsar-admin namespaces clear-backlog [-b]).
func (s *server) clearNamespaceBacklog(ctx context.Context, r *http.Request) (any, error) {
	only := r.PathValue("sub")
	return nil, s.forNamespaceTopics(ctx, r, func(topic string) error {
		subs, err := s.broker.Subscriptions(ctx, topic)
		if err != nil {
			return err
		}
		for _, sub := range subs {
			if only == "" || sub == only {
				if err := s.broker.Skip(ctx, topic, sub, -1); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (s *server) listPartitioned(ctx context.Context, r *http.Request) (any, error) {
	tenant, ns := r.PathValue("tenant"), r.PathValue("namespace")
	if err := s.checkNamespace(ctx, tenant, ns); err != nil {
		return nil, err
	}
	all, err := s.res.PartitionedTopics(ctx, tenant, ns)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, name := range all {
		if strings.HasPrefix(name, domainOf(r)+"://") {
			out = append(out, name)
		}
	}
	return out, nil
}

// createTopic creates a non-partitioned topic; the body is null or a properties map.
func (s *server) createTopic(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	var props map[string]string
	if err := decodeBody(r, &props); err != nil {
		return nil, err
	}
	if n, err := s.partitionsOf(ctx, t); err != nil || n > 0 {
		if err == nil {
			err = withReason(reasonTopicExists, fmt.Errorf("this topic already exists as a partitioned topic: %w", resources.ErrAlreadyExists))
		}
		return nil, err
	}
	if err := s.broker.CreateTopic(ctx, t.String(), 0); err != nil {
		return nil, topicExists(err)
	}
	if len(props) > 0 {
		return nil, s.res.UpdateTopic(ctx, t.domain, t.tenant, t.ns, t.local, func(rec *resources.TopicRecord) error {
			rec.Properties = props
			return nil
		})
	}
	return nil, nil
}

// partitionCountBody accepts the bare integer the Go client sends and the
// {"partitions":N,"properties":{...}} object pulsaradmin sends.
func partitionCountBody(r *http.Request) (int, map[string]string, error) {
	var raw json.RawMessage
	if err := decodeBody(r, &raw); err != nil {
		return 0, nil, err
	}
	if len(raw) == 0 {
		return 0, nil, fmt.Errorf("%w: missing partition count", ErrBadRequest)
	}
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n, nil, nil
	}
	var m resources.PartitionedTopicMetadata
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, nil, fmt.Errorf("%w: want a partition count or {\"partitions\":N}: %v", ErrBadRequest, err)
	}
	return m.Partitions, m.Properties, nil
}

func (s *server) createPartitioned(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	n, props, err := partitionCountBody(r)
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: the number of partitions must be at least 1, got %d", ErrBadRequest, n)
	}
	if _, err := s.res.Topic(ctx, t.domain, t.tenant, t.ns, t.local); err == nil {
		return nil, withReason(reasonTopicExists, fmt.Errorf("this topic already exists as a non-partitioned topic: %w", resources.ErrAlreadyExists))
	}
	err = s.res.CreatePartitionedTopic(ctx, t.domain, t.tenant, t.ns, t.local, resources.PartitionedTopicMetadata{Partitions: n, Properties: props})
	return nil, topicExists(err)
}

// topicExists words a create's conflict as Pulsar does.
func topicExists(err error) error {
	if err != nil && statusFor(err) == http.StatusConflict {
		return withReason(reasonTopicExists, fmt.Errorf("this topic already exists: %w", err))
	}
	return err
}

// updatePartitions only grows a partitioned topic: partitions cannot be removed while
// clients may be attached to them.
func (s *server) updatePartitions(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	n, _, err := partitionCountBody(r)
	if err != nil {
		return nil, err
	}
	err = s.res.UpdatePartitionedTopic(ctx, t.domain, t.tenant, t.ns, t.local, func(m *resources.PartitionedTopicMetadata) error {
		if n <= m.Partitions {
			return fmt.Errorf("%w: number of partitions can only grow (from %d, asked %d)", ErrNotAllowed, m.Partitions, n)
		}
		m.Partitions = n
		return nil
	})
	if errors.Is(err, resources.ErrNotFound) {
		return nil, fmt.Errorf("partitioned topic %s does not exist: %w", t, err)
	}
	return nil, err
}

func (s *server) getPartitions(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	m, err := s.res.PartitionedTopic(ctx, t.domain, t.tenant, t.ns, t.local)
	if errors.Is(err, resources.ErrNotFound) {
		return partitionsJSON{}, nil // not partitioned (or not yet created): 0, as Pulsar answers
	}
	m.CreationTimestamp = 0 // ours, not in Pulsar's PartitionedTopicMetadata (omitted when 0)
	return m, err
}

func (s *server) deletePartitioned(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	m, err := s.res.PartitionedTopic(ctx, t.domain, t.tenant, t.ns, t.local)
	if errors.Is(err, resources.ErrNotFound) {
		return nil, fmt.Errorf("partitioned topic %s does not exist: %w", t, err)
	}
	if err != nil {
		return nil, err
	}
	force := boolParam(r, "force")
	for i := range m.Partitions {
		// Each partition where it is served: in a cluster they spread over the brokers.
		if err := s.deleteWhereServed(ctx, t.partition(i), force); err != nil {
			return nil, err
		}
	}
	return nil, s.res.DeletePartitionedTopic(ctx, t.domain, t.tenant, t.ns, t.local)
}

func (s *server) deleteTopic(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	return nil, s.broker.DeleteTopic(ctx, t.String(), boolParam(r, "force"))
}

func (s *server) topicStats(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	st, err := s.broker.TopicStats(ctx, t.String())
	if err == nil {
		s.rates.apply(t.String(), &st, time.Now())
		excludeStats(r, &st)
	}
	return st, err
}

// excludeStats applies Pulsar's excludePublishers / excludeConsumers stats options.
func excludeStats(r *http.Request, st *topics.TopicStats) {
	if boolParam(r, "excludePublishers") {
		st.Publishers = []topics.PublisherStats{}
	}
	if boolParam(r, "excludeConsumers") {
		for name, sub := range st.Subscriptions {
			sub.Consumers = []topics.ConsumerStats{}
			st.Subscriptions[name] = sub
		}
	}
}

// partitionedTopicOf is the partitioned topic in the path and its partition count; a topic
// that is not partitioned is 404 (Pulsar's "Partitioned Topic ... not found").
func (s *server) partitionedTopicOf(ctx context.Context, r *http.Request) (topicRef, int, error) {
	t, n, err := s.topicWithPartitions(ctx, r)
	if err == nil && n == 0 {
		err = fmt.Errorf("partitioned topic %s does not exist: %w", t, resources.ErrNotFound)
	}
	return t, n, err
}

func (s *server) partitionedStats(ctx context.Context, r *http.Request) (any, error) {
	t, n, err := s.partitionedTopicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	// partitions is {} without perPartition, as Pulsar sends it.
	out := PartitionedTopicStats{TopicStats: topics.NewTopicStats(), Metadata: partitionsJSON{n}, Partitions: map[string]topics.TopicStats{}}
	per := boolParam(r, "perPartition")
	// A partition's owner answers its /stats with the same options.
	stats, ok, err := eachPartitionAnswer(ctx, s, r, t, n, "/stats", func(p string) (topics.TopicStats, error) {
		st, err := s.broker.TopicStats(ctx, p)
		if err == nil {
			s.rates.apply(p, &st, time.Now())
			excludeStats(r, &st)
		}
		return st, err
	})
	if err != nil {
		return nil, err
	}
	for i, st := range stats {
		if !ok[i] {
			continue // a partition nobody used yet
		}
		out.Add(st)
		if per {
			out.Partitions[t.partition(i)] = st
		}
	}
	return out, nil
}

func (s *server) internalStats(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	return s.broker.InternalStats(ctx, t.String())
}

// partitionedInternalStats is GET T/partitioned-internalStats (pulsar-admin topics
// partitioned-stats-internal): every partition's internal stats, each read where it is
// served, under Pulsar's PartitionedTopicInternalStats {"metadata","partitions"}.
func (s *server) partitionedInternalStats(ctx context.Context, r *http.Request) (any, error) {
	t, n, err := s.partitionedTopicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	stats, ok, err := eachPartitionAnswer(ctx, s, r, t, n, "/internalStats", func(p string) (json.RawMessage, error) {
		st, err := s.broker.InternalStats(ctx, p)
		if err != nil {
			return nil, err
		}
		return json.Marshal(st)
	})
	if err != nil {
		return nil, err
	}
	out := struct {
		Metadata   partitionsJSON             `json:"metadata"`
		Partitions map[string]json.RawMessage `json:"partitions"`
	}{Metadata: partitionsJSON{n}, Partitions: map[string]json.RawMessage{}}
	for i, st := range stats {
		if ok[i] {
			out.Partitions[t.partition(i)] = st
		}
	}
	if len(out.Partitions) == 0 {
		// Pulsar's answer while no partition was ever used.
		return nil, withReason("Internal topics have not been generated yet", fmt.Errorf("no partition of %s was used yet: %w", t, resources.ErrNotFound))
	}
	return out, nil
}

func (s *server) lastMessageID(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	return s.broker.LastMessageID(ctx, t.String())
}

func (s *server) messageIDAt(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	ts, err := intPath(r, "timestamp")
	if err != nil {
		return nil, err
	}
	return s.broker.MessageIDAt(ctx, t.String(), time.UnixMilli(ts))
}

func (s *server) terminate(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	return s.broker.Terminate(ctx, t.String())
}

func (s *server) unload(ctx context.Context, r *http.Request) (any, error) {
	t, n, err := s.topicWithPartitions(ctx, r)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		if t.domain == "persistent" && !partitionSuffix.MatchString(t.local) {
			// Pulsar answers 404 for a topic that does not exist; unloading nothing is
			// not a success a script should see. (A partition needs no record of its own.)
			if _, err := s.res.Topic(ctx, t.domain, t.tenant, t.ns, t.local); errors.Is(err, resources.ErrNotFound) {
				return nil, fmt.Errorf("topic %s does not exist: %w", t, err)
			}
		}
		return nil, s.broker.Unload(ctx, t.String())
	}
	return nil, s.eachPartition(ctx, r, t, nil, func(p string) error { return s.broker.Unload(ctx, p) })
}

// properties are kept with the partitioned-topic metadata or the topic's own record.
func (s *server) modifyProperties(ctx context.Context, t topicRef, modify func(map[string]string) map[string]string) (map[string]string, error) {
	var out map[string]string
	n, err := s.partitionsOf(ctx, t)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		err = s.res.UpdatePartitionedTopic(ctx, t.domain, t.tenant, t.ns, t.local, func(m *resources.PartitionedTopicMetadata) error {
			m.Properties = modify(m.Properties)
			out = m.Properties
			return nil
		})
	} else {
		err = s.res.UpdateTopic(ctx, t.domain, t.tenant, t.ns, t.local, func(rec *resources.TopicRecord) error {
			rec.Properties = modify(rec.Properties)
			out = rec.Properties
			return nil
		})
	}
	if errors.Is(err, resources.ErrNotFound) {
		return nil, fmt.Errorf("topic %s does not exist: %w", t, err)
	}
	if out == nil {
		out = map[string]string{}
	}
	return out, err
}

func (s *server) getProperties(ctx context.Context, r *http.Request) (any, error) {
	t, n, err := s.topicWithPartitions(ctx, r)
	if err != nil {
		return nil, err
	}
	var props map[string]string
	if n > 0 {
		m, err := s.res.PartitionedTopic(ctx, t.domain, t.tenant, t.ns, t.local)
		if err != nil {
			return nil, err
		}
		props = m.Properties
	} else {
		rec, err := s.res.Topic(ctx, t.domain, t.tenant, t.ns, t.local)
		if errors.Is(err, resources.ErrNotFound) {
			return nil, fmt.Errorf("topic %s does not exist: %w", t, err)
		}
		if err != nil {
			return nil, err
		}
		props = rec.Properties
	}
	if props == nil {
		props = map[string]string{}
	}
	return props, nil
}

func (s *server) putProperties(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	var add map[string]string
	if err := decodeBody(r, &add); err != nil {
		return nil, err
	}
	_, err = s.modifyProperties(ctx, t, func(m map[string]string) map[string]string {
		if m == nil {
			m = map[string]string{}
		}
		maps.Copy(m, add)
		return m
	})
	return nil, err
}

func (s *server) deleteProperty(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	key := r.URL.Query().Get("key")
	_, err = s.modifyProperties(ctx, t, func(m map[string]string) map[string]string {
		delete(m, key)
		return m
	})
	return nil, err
}

func (s *server) listSubscriptions(ctx context.Context, r *http.Request) (any, error) {
	t, n, err := s.topicWithPartitions(ctx, r)
	if err != nil || n == 0 {
		if err != nil {
			return nil, err
		}
		return s.broker.Subscriptions(ctx, t.String())
	}
	perPartition, _, err := eachPartitionAnswer(ctx, s, r, t, n, "/subscriptions", func(p string) ([]string, error) {
		return s.broker.Subscriptions(ctx, p)
	})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []string{}
	for _, subs := range perPartition {
		for _, sub := range subs {
			if !seen[sub] {
				seen[sub] = true
				out = append(out, sub)
			}
		}
	}
	return out, nil
}

// subOp parses topic and subscription and runs f on each partition where it is served
// (body: the request's JSON body, decoded, for a partition's owner; nil: none).
func (s *server) subOp(ctx context.Context, r *http.Request, body any, f func(topic, sub string) error) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	sub := r.PathValue("sub")
	return nil, s.eachPartition(ctx, r, t, body, func(topic string) error { return f(topic, sub) })
}

func (s *server) createSubscription(ctx context.Context, r *http.Request) (any, error) {
	at := MessageID{LedgerID: latestID, EntryID: latestID, PartitionIndex: -1}
	if err := decodeBody(r, &at); err != nil {
		return nil, err
	}
	return s.subOp(ctx, r, at, func(topic, sub string) error { return s.broker.CreateSubscription(ctx, topic, sub, at) })
}

// latestID is the ledger and entry id of MessageId.Latest.
const latestID = 1<<63 - 1

func (s *server) deleteSubscription(ctx context.Context, r *http.Request) (any, error) {
	force := boolParam(r, "force")
	return s.subOp(ctx, r, nil, func(topic, sub string) error { return s.broker.DeleteSubscription(ctx, topic, sub, force) })
}

func (s *server) skip(ctx context.Context, r *http.Request) (any, error) {
	n, err := intPath(r, "n")
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("%w: cannot skip %d messages", ErrBadRequest, n)
	}
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	if err := s.refusePartitioned(ctx, t, "Skip messages on a partitioned topic is not allowed"); err != nil {
		return nil, err
	}
	return nil, s.broker.Skip(ctx, t.String(), r.PathValue("sub"), n)
}

func (s *server) skipAll(ctx context.Context, r *http.Request) (any, error) {
	return s.subOp(ctx, r, nil, func(topic, sub string) error { return s.broker.Skip(ctx, topic, sub, -1) })
}

func (s *server) expire(ctx context.Context, r *http.Request) (any, error) {
	secs, err := intPath(r, "seconds")
	if err != nil {
		return nil, err
	}
	return s.subOp(ctx, r, nil, func(topic, sub string) error {
		return s.broker.ExpireMessages(ctx, topic, sub, time.Duration(secs)*time.Second)
	})
}

func (s *server) expireAll(ctx context.Context, r *http.Request) (any, error) {
	secs, err := intPath(r, "seconds")
	if err != nil {
		return nil, err
	}
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	return nil, s.eachPartition(ctx, r, t, nil, func(topic string) error {
		subs, err := s.broker.Subscriptions(ctx, topic)
		if err != nil {
			return err
		}
		for _, sub := range subs {
			if err := s.broker.ExpireMessages(ctx, topic, sub, time.Duration(secs)*time.Second); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *server) resetCursorToID(ctx context.Context, r *http.Request) (any, error) {
	id := MessageID{PartitionIndex: -1}
	if err := decodeBody(r, &id); err != nil {
		return nil, err
	}
	if handled, err := s.resetPartitionToID(ctx, r, id); handled {
		return nil, err
	}
	return s.subOp(ctx, r, id, func(topic, sub string) error { return s.broker.ResetCursor(ctx, topic, sub, &id, time.Time{}) })
}

func (s *server) resetCursorToTime(ctx context.Context, r *http.Request) (any, error) {
	ts, err := intPath(r, "timestamp")
	if err != nil {
		return nil, err
	}
	return s.subOp(ctx, r, nil, func(topic, sub string) error {
		return s.broker.ResetCursor(ctx, topic, sub, nil, time.UnixMilli(ts))
	})
}

func (s *server) peek(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	k, err := intPath(r, "k")
	if err != nil {
		return nil, err
	}
	if k < 1 || k > 1<<20 {
		return nil, fmt.Errorf("%w: position must be between 1 and %d", ErrBadRequest, 1<<20)
	}
	if err := s.refusePartitioned(ctx, t, "Peek messages on a partitioned topic is not allowed"); err != nil {
		return nil, err
	}
	m, err := s.broker.Peek(ctx, t.String(), r.PathValue("sub"), int(k))
	if err != nil {
		return nil, err
	}
	return rawResponse(m), nil
}

// examineMessage is GET T/examinemessage?initialPosition=earliest|latest&messagePosition=n.
func (s *server) examineMessage(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	latest := true
	switch q.Get("initialPosition") {
	case "", "latest":
	case "earliest":
		latest = false
	default:
		return nil, fmt.Errorf("%w: initialPosition must be earliest or latest", ErrBadRequest)
	}
	pos := int64(1)
	if v := q.Get("messagePosition"); v != "" {
		if pos, err = strconv.ParseInt(v, 10, 64); err != nil || pos < 1 {
			return nil, fmt.Errorf("%w: messagePosition must be a positive integer, got %q", ErrBadRequest, v)
		}
	}
	m, err := s.broker.ExamineMessage(ctx, t.String(), latest, pos)
	if err != nil {
		return nil, err
	}
	return rawResponse(m), nil
}

func (s *server) messageByID(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	l, err := intPath(r, "ledger")
	if err != nil {
		return nil, err
	}
	e, err := intPath(r, "entry")
	if err != nil {
		return nil, err
	}
	m, err := s.broker.Message(ctx, t.String(), MessageID{LedgerID: l, EntryID: e, PartitionIndex: -1})
	if err != nil {
		return nil, err
	}
	return rawResponse(m), nil
}

// rawResponse writes a message the way Pulsar's peek does: the payload as body, the id
// and metadata in X-Pulsar-* headers (pulsaradmin splits a batch by X-Pulsar-Num-Batch-Message).
type rawResponse RawMessage

func (m rawResponse) writeTo(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Pulsar-Message-ID", strconv.FormatInt(m.ID.LedgerID, 10)+":"+strconv.FormatInt(m.ID.EntryID, 10))
	h.Set("X-Pulsar-Publish-Time", time.UnixMilli(m.PublishTime).UTC().Format("2006-01-02T15:04:05.000Z"))
	if m.EventTime > 0 {
		h.Set("X-Pulsar-Event-Time", time.UnixMilli(m.EventTime).UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	if m.Key != "" {
		h.Set("X-Pulsar-Partition-Key", m.Key)
	}
	if m.ProducerName != "" {
		h.Set("X-Pulsar-Producer-Name", m.ProducerName)
		h.Set("X-Pulsar-Sequence-Id", strconv.FormatInt(m.SequenceID, 10))
	}
	if m.NumBatch > 0 {
		h.Set("X-Pulsar-Num-Batch-Message", strconv.Itoa(m.NumBatch))
	}
	if len(m.Properties) > 0 {
		b, _ := json.Marshal(m.Properties)
		h.Set("X-Pulsar-Property", string(b))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(m.Payload)
}
