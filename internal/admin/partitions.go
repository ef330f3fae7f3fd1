package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/magnetar-io/magnetar/internal/topics"
)

// Requests on a partitioned topic in a cluster. Its partitions are topics of their own,
// each hashed into its own bundle, so they spread over the brokers, and a broker serves
// only the topics of the bundles it owns. A request naming a partitioned topic therefore
// runs partition by partition where each is served, as Pulsar's PersistentTopicsBase does
// through its admin client: here for the partitions this broker serves (every one in a
// standalone), and for each other one at its owner, over HTTP: the same request with the
// partition's name in the path and authoritative=true, with this broker's credentials (the
// caller was authorized once, on this broker). The partitions run in parallel; the first
// failure, by partition, is the answer, with the status and reason its owner gave.

// partitionFanOut bounds the partitions in flight at once for one request.
const partitionFanOut = 16

// maxOwnerAnswer bounds an owner's answer read back (a partition's stats list its consumers).
const maxOwnerAnswer = 32 << 20

// ownerCall is the request a topic's owner gets for it.
type ownerCall struct {
	method string
	// rest is the escaped path after the topic ("/subscription/s/skip_all"), query the
	// request's (authoritative=true is added), body is sent as JSON when non-nil, and a 2xx
	// answer is decoded into out when non-nil.
	rest  string
	query url.Values
	body  any
	out   any
}

// ownerError is an owner's failed answer, passed on with its status and reason.
type ownerError struct {
	url    string
	status int
	reason string
}

func (e *ownerError) Error() string {
	return fmt.Sprintf("admin: %s answered %d: %s", e.url, e.status, e.reason)
}

// whereServed runs local when this broker serves topic (or there is no cluster), and
// otherwise sends call to the broker that does.
func (s *server) whereServed(ctx context.Context, topic string, local func() error, call ownerCall) error {
	if s.own == nil {
		return local()
	}
	res, err := s.own.Lookup(ctx, topic, false)
	if err != nil {
		return fmt.Errorf("%w: looking up %s: %w", ErrUnavailable, topic, err)
	}
	if res.Self {
		return local()
	}
	return s.callOwner(ctx, res.HTTPURL, topic, call)
}

// callOwner sends call for topic to the broker at httpURL (following its redirect if the
// topic moved meanwhile).
func (s *server) callOwner(ctx context.Context, httpURL, topic string, call ownerCall) error {
	n, err := topics.ParseName(topic)
	if err != nil {
		return err
	}
	q := url.Values{}
	maps.Copy(q, call.query)
	q.Set("authoritative", "true")
	u := strings.TrimSuffix(httpURL, "/") + "/admin/v2/" + n.Domain + "/" + url.PathEscape(n.Tenant) + "/" +
		url.PathEscape(n.Namespace) + "/" + url.PathEscape(n.Local) + call.rest + "?" + q.Encode()
	var body io.Reader
	if call.body != nil {
		b, err := json.Marshal(call.body)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, call.method, u, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.httpc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: calling %s: %w", ErrUnavailable, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxOwnerAnswer))
	if err != nil {
		return fmt.Errorf("%w: reading the answer of %s: %w", ErrUnavailable, u, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Reason string `json:"reason"`
		}
		if json.Unmarshal(b, &e) != nil || e.Reason == "" {
			e.Reason = http.StatusText(resp.StatusCode)
		}
		return &ownerError{url: u, status: resp.StatusCode, reason: e.Reason}
	}
	if call.out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, call.out); err != nil {
			return fmt.Errorf("admin: decoding the answer of %s: %w", u, err)
		}
	}
	return nil
}

// forPartitions runs f for partitions 0..n-1 in parallel (at most partitionFanOut at once)
// and returns the first failure by partition.
func forPartitions(n int, f func(i int) error) error {
	errs := make([]error, n)
	slots := make(chan struct{}, partitionFanOut)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// eachPartition runs f on the topic, or, on a partitioned topic, on every partition where
// it is served: the owner of a partition gets the request r again for that partition, with
// body as its JSON body (Pulsar's subscription operations on a partitioned topic apply to
// every partition).
func (s *server) eachPartition(ctx context.Context, r *http.Request, t topicRef, body any, f func(topic string) error) error {
	n, err := s.partitionsOf(ctx, t)
	if err != nil {
		return err
	}
	if n == 0 {
		return f(t.String())
	}
	call := ownerCall{method: r.Method, rest: restOf(r, t), query: r.URL.Query(), body: body}
	return forPartitions(n, func(i int) error {
		p := t.partition(i)
		return s.whereServed(ctx, p, func() error { return f(p) }, call)
	})
}

// eachPartitionAnswer gathers an answer from every partition of a partitioned topic (n of
// them), each where it is served: local reads it here, an owner answers GET rest (with r's
// query) for its partition. A partition nobody used yet (404) is skipped (ok false).
func eachPartitionAnswer[T any](ctx context.Context, s *server, r *http.Request, t topicRef, n int, rest string,
	local func(topic string) (T, error)) (out []T, ok []bool, err error) {
	out, ok = make([]T, n), make([]bool, n)
	err = forPartitions(n, func(i int) error {
		p := t.partition(i)
		err := s.whereServed(ctx, p, func() (err error) {
			out[i], err = local(p)
			return err
		}, ownerCall{method: http.MethodGet, rest: rest, query: r.URL.Query(), out: &out[i]})
		if statusFor(err) == http.StatusNotFound {
			return nil
		}
		ok[i] = err == nil
		return err
	})
	return out, ok, err
}

// restOf is the escaped path of r after its topic: what names the same operation on a
// partition.
func restOf(r *http.Request, t topicRef) string {
	rest := strings.TrimPrefix(r.URL.Path, "/admin/v2/"+t.domain+"/"+t.tenant+"/"+t.ns+"/"+t.local)
	segs := strings.Split(rest, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return strings.Join(segs, "/")
}

// errPartitioned is Pulsar's 405 for an operation it refuses on a partitioned topic (skip,
// peek: each names a position in one partition).
var errPartitioned = errors.New("admin: not allowed on a partitioned topic")

// refusePartitioned answers Pulsar's 405 with reason when t is a partitioned topic.
func (s *server) refusePartitioned(ctx context.Context, t topicRef, reason string) error {
	n, err := s.partitionsOf(ctx, t)
	if err != nil || n == 0 {
		return err
	}
	return withReason(reason, fmt.Errorf("%w: %s has %d partitions", errPartitioned, t, n))
}

// errNotPartitioned is Pulsar's 405 for a partitioned-only operation on a topic that is not
// partitioned.
var errNotPartitioned = errors.New("admin: not a partitioned topic")

// terminatePartitioned terminates every partition of a partitioned topic, each at its
// owner (Pulsar's POST T/terminate/partitions), and answers Pulsar's map of partition index
// to each partition's last message id. A topic that is not partitioned is Pulsar's 405.
func (s *server) terminatePartitioned(ctx context.Context, r *http.Request) (any, error) {
	t, n, err := s.topicWithPartitions(ctx, r)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, withReason("Termination of a non-partitioned topic is not allowed using partitioned-terminate, please use terminate commands.",
			fmt.Errorf("%w: %s", errNotPartitioned, t))
	}
	ids := make([]MessageID, n)
	err = forPartitions(n, func(i int) error {
		p := t.partition(i)
		return s.whereServed(ctx, p, func() (err error) {
			ids[i], err = s.broker.Terminate(ctx, p)
			return err
		}, ownerCall{method: http.MethodPost, rest: "/terminate", query: r.URL.Query(), out: &ids[i]})
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]MessageID, n)
	for i, id := range ids {
		out[strconv.Itoa(i)] = id
	}
	return out, nil
}
