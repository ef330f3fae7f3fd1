package admin

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/schema"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// The REST producer (Pulsar's PIP-64, "Pulsar REST" in its client docs):
//
//	POST /topics/{persistent|non-persistent}/{tenant}/{namespace}/{topic}
//	POST /topics/{persistent|non-persistent}/{tenant}/{namespace}/{topic}/partitions/{n}
//
// with Pulsar's ProducerMessages body and ProducerAcks answer. As in Pulsar, the topic must
// exist (nothing is auto-created); a partitioned topic's messages go to the partition of
// their key's hash, or round robin without a key, over the partitions this broker owns (in a
// cluster; servedPartitions). Payloads are text: STRING and BYTES (and
// no schema) store it as UTF-8 bytes, JSON stores the JSON text, AVRO encodes the JSON text
// with the Avro schema. The console's "produce a message" uses it.

// Publisher is what the REST producer needs from the broker; a Broker that does not
// implement it answers with 501.
type Publisher interface {
	// Publish stores msgs on one topic (a partition or a non-partitioned topic) with one
	// producer, in order, and returns where each landed. sc, when not nil, is the producer's
	// schema, registered or checked as a client's would be.
	Publish(ctx context.Context, topic string, sc *schema.Schema, msgs []topics.MessageSpec) ([]MessageID, error)
}

// producerMessages is Pulsar's ProducerMessages.
type producerMessages struct {
	KeySchema     string            `json:"keySchema"`
	ValueSchema   string            `json:"valueSchema"`
	SchemaVersion *int64            `json:"schemaVersion"`
	ProducerName  string            `json:"producerName"`
	Messages      []producerMessage `json:"messages"`
}

// producerMessage is Pulsar's ProducerMessage (the REST one).
type producerMessage struct {
	Key                 string            `json:"key"`
	Payload             string            `json:"payload"`
	Properties          map[string]string `json:"properties"`
	EventTime           json.RawMessage   `json:"eventTime"` // a number or a numeric string
	SequenceID          int64             `json:"sequenceId"`
	ReplicationClusters []string          `json:"replicationClusters"`
	DisableReplication  bool              `json:"disableReplication"`
	DeliverAt           int64             `json:"deliverAt"`
	DeliverAfterMs      int64             `json:"deliverAfterMs"`
}

// producerAcks is Pulsar's ProducerAcks.
type producerAcks struct {
	MessagePublishResults []messagePublishResult `json:"messagePublishResults"`
	SchemaVersion         int64                  `json:"schemaVersion"`
}

// messagePublishResult: messageId is "ledgerId:entryId:partition" (partition -1 for a
// non-partitioned topic); errorCode 0 is success, 1 a retriable error, 2 a final one.
type messagePublishResult struct {
	MessageID     string `json:"messageId"`
	ErrorCode     int    `json:"errorCode"`
	SchemaVersion int64  `json:"schemaVersion"`
	Error         string `json:"error,omitempty"`
}

// schemaInfo is the JSON of Pulsar's SchemaInfo as valueSchema carries it (schema bytes in
// base64).
type schemaInfo struct {
	Name       string            `json:"name"`
	Schema     string            `json:"schema"`
	Type       string            `json:"type"`
	Properties map[string]string `json:"properties"`
}

func (s *server) registerProduce(mux *http.ServeMux) {
	for _, d := range []string{"persistent", "non-persistent"} {
		base := "POST /topics/" + d + "/{tenant}/{namespace}/{topic}"
		mux.HandleFunc(base, s.handle(s.produce))
		mux.HandleFunc(base+"/partitions/{partition}", s.handle(s.produce))
	}
}

// produce: POST /topics/{domain}/{tenant}/{namespace}/{topic}[/partitions/{n}].
func (s *server) produce(ctx context.Context, r *http.Request) (any, error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	pub, ok := s.broker.(Publisher)
	if !ok {
		return nil, fmt.Errorf("%w: the REST producer needs a broker in this process", ErrNotSupported)
	}
	n, err := s.partitionsOf(ctx, t)
	if err != nil {
		return nil, err
	}
	var served []int // nil: every partition
	if n > 0 && r.PathValue("partition") == "" {
		var elsewhere string
		if served, elsewhere, err = s.servedPartitions(ctx, r, t, n); err != nil {
			return nil, err
		}
		if served != nil && len(served) == 0 {
			return redirectTo(r, elsewhere), nil
		}
	}
	var req producerMessages
	// The body carries messages up to maxMessageSize, plus their JSON framing.
	if err := decodeBodyUpTo(r, &req, s.maxMessageSize+64<<10); err != nil {
		return nil, err
	}
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("%w: no messages", ErrBadRequest)
	}
	if req.KeySchema != "" {
		return nil, fmt.Errorf("%w: keySchema (KEY_VALUE payloads) is not supported by the REST producer", ErrNotSupported)
	}
	sc, err := s.restSchema(ctx, t, req)
	if err != nil {
		return nil, err
	}
	name := req.ProducerName
	if name == "" {
		name = "rest-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	specs := make([]topics.MessageSpec, len(req.Messages))
	for i, m := range req.Messages {
		if specs[i], err = restMessage(m, sc, name); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
	}
	targets, err := restTargets(r, t, n, served, specs)
	if err != nil {
		return nil, err
	}
	acks := producerAcks{MessagePublishResults: make([]messagePublishResult, len(specs))}
	stored := 0
	for _, part := range targets {
		batch := make([]topics.MessageSpec, len(part.idx))
		for j, i := range part.idx {
			batch[j] = specs[i]
		}
		ids, err := pub.Publish(ctx, part.topic, sc, batch)
		if err != nil && stored == 0 && len(ids) == 0 {
			return nil, err // nothing stored: the request fails as a whole, with its status
		}
		stored += len(ids)
		for j, i := range part.idx {
			res := &acks.MessagePublishResults[i]
			if j < len(ids) {
				res.MessageID = fmt.Sprintf("%d:%d:%d", ids[j].LedgerID, ids[j].EntryID, part.partition)
				continue
			}
			res.ErrorCode, res.Error = 1, err.Error() // not stored: the client may retry it
		}
	}
	return acks, nil
}

// restSchema is the producer's schema: valueSchema, or the topic's schema at schemaVersion,
// or none.
func (s *server) restSchema(ctx context.Context, t topicRef, req producerMessages) (*schema.Schema, error) {
	if req.ValueSchema != "" {
		var si schemaInfo
		if err := json.Unmarshal([]byte(req.ValueSchema), &si); err != nil {
			return nil, fmt.Errorf("%w: valueSchema is not a SchemaInfo JSON: %v", ErrBadRequest, err)
		}
		typ, err := schema.ParseType(si.Type)
		if err != nil {
			return nil, fmt.Errorf("%w: valueSchema: %w", ErrBadRequest, err)
		}
		data, err := base64.StdEncoding.DecodeString(si.Schema)
		if err != nil {
			return nil, fmt.Errorf("%w: valueSchema.schema is not base64: %v", ErrBadRequest, err)
		}
		return &schema.Schema{Type: typ, Data: data, Properties: si.Properties}, nil
	}
	if req.SchemaVersion == nil || s.schemas == nil {
		return nil, nil
	}
	e, err := s.schemas.Get(ctx, schema.ID{Tenant: t.tenant, Namespace: t.ns, Topic: t.local}, *req.SchemaVersion)
	if err != nil {
		return nil, err
	}
	return &e.Schema, nil
}

// restMessage turns one REST message into a topic-service message under sc.
func restMessage(m producerMessage, sc *schema.Schema, producer string) (topics.MessageSpec, error) {
	spec := topics.MessageSpec{Key: m.Key, Properties: m.Properties, ProducerName: producer, SequenceID: m.SequenceID}
	if len(m.EventTime) > 0 && string(m.EventTime) != "null" {
		s := strings.Trim(string(m.EventTime), `"`)
		if s != "" {
			ms, err := strconv.ParseInt(s, 10, 64)
			if err != nil || ms < 0 {
				return spec, fmt.Errorf("%w: eventTime %s is not milliseconds since the epoch", ErrBadRequest, m.EventTime)
			}
			spec.EventTime = time.UnixMilli(ms)
		}
	}
	switch {
	case m.DeliverAt < 0 || m.DeliverAfterMs < 0:
		return spec, fmt.Errorf("%w: deliverAt and deliverAfterMs cannot be negative", ErrBadRequest)
	case m.DeliverAt > 0:
		spec.DeliverAt = time.UnixMilli(m.DeliverAt)
	case m.DeliverAfterMs > 0:
		spec.DeliverAt = time.Now().Add(time.Duration(m.DeliverAfterMs) * time.Millisecond)
	}
	payload, err := encodePayload(m.Payload, sc)
	if err != nil {
		return spec, err
	}
	spec.Payload = payload
	return spec, nil
}

// encodePayload encodes the REST payload text as sc's clients would.
func encodePayload(text string, sc *schema.Schema) ([]byte, error) {
	if sc == nil {
		return []byte(text), nil
	}
	switch sc.Type {
	case schema.None, schema.Bytes, schema.String:
		return []byte(text), nil
	case schema.JSON:
		if !json.Valid([]byte(text)) {
			return nil, fmt.Errorf("%w: the payload is not JSON", ErrBadRequest)
		}
		return []byte(text), nil
	case schema.Avro:
		as, err := avro.Parse(string(sc.Data))
		if err != nil {
			return nil, fmt.Errorf("%w: the Avro schema: %v", ErrBadRequest, err)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader([]byte(text)))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: the payload is not JSON: %v", ErrBadRequest, err)
		}
		out, err := avro.Marshal(as, avroValue(v))
		if err != nil {
			return nil, fmt.Errorf("%w: the payload does not fit the Avro schema: %v", ErrBadRequest, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: %s payloads over REST", ErrNotSupported, sc.Type)
}

// avroValue turns json.Number into the Go numbers the Avro encoder takes.
func avroValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = avroValue(e)
		}
	case []any:
		for i, e := range x {
			x[i] = avroValue(e)
		}
	}
	return v
}

// restTarget is the messages (by index) going to one topic or partition.
type restTarget struct {
	topic     string
	partition int // -1: a non-partitioned topic
	idx       []int
}

// roundRobin spreads keyless REST messages over partitions across requests.
var roundRobin atomic.Uint64

// restTargets routes specs: to the path's partition, to the topic itself when it is not
// partitioned, or by key hash (keyless: round robin) over the partitions served here
// (served; nil: all of them).
func restTargets(r *http.Request, t topicRef, partitions int, served []int, specs []topics.MessageSpec) ([]restTarget, error) {
	all := func() []int {
		idx := make([]int, len(specs))
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	if p := r.PathValue("partition"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n >= partitions {
			return nil, fmt.Errorf("%w: partition %q of %s (%d partitions)", ErrBadRequest, p, t, partitions)
		}
		return []restTarget{{topic: t.partition(n), partition: n, idx: all()}}, nil
	}
	if partitions == 0 {
		return []restTarget{{topic: t.String(), partition: -1, idx: all()}}, nil
	}
	if served == nil {
		served = make([]int, partitions)
		for i := range served {
			served[i] = i
		}
	}
	out := make([]restTarget, len(served))
	for i, p := range served {
		out[i] = restTarget{topic: t.partition(p), partition: p}
	}
	for i, sp := range specs {
		var n int
		if sp.Key != "" {
			h := fnv.New32a()
			h.Write([]byte(sp.Key))
			n = int(h.Sum32() % uint32(len(served)))
		} else {
			n = int(roundRobin.Add(1) % uint64(len(served)))
		}
		out[n].idx = append(out[n].idx, i)
	}
	used := out[:0]
	for _, o := range out {
		if len(o.idx) > 0 {
			used = append(used, o)
		}
	}
	return used, nil
}

// restProducerIDs numbers the REST producers in topic stats.
var restProducerIDs atomic.Uint64

// Publish implements Publisher: one producer for the call, closed when the last message is
// durable (or the call gives up).
func (a topicsAPI) Publish(ctx context.Context, topic string, sc *schema.Schema, msgs []topics.MessageSpec) ([]MessageID, error) {
	t, err := a.load(ctx, topic)
	if err != nil {
		return nil, err
	}
	p, err := t.AddProducer(ctx, topics.ProducerSpec{ID: restProducerIDs.Add(1), Name: msgs[0].ProducerName, Schema: sc}, restClient{})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	type result struct {
		pos topics.Position
		err error
	}
	results := make(chan result, len(msgs))
	sent := 0
	var sendErr error
	for _, spec := range msgs {
		m, err := topics.BuildMessage(spec)
		if err == nil {
			err = p.Publish(m, func(pos topics.Position, err error) { results <- result{pos, err} })
		}
		if errors.Is(err, topics.ErrDuplicate) {
			results <- result{pos: topics.Position{LedgerID: -1, EntryID: -1}} // as the binary protocol answers
		} else if err != nil {
			sendErr = err
			break
		}
		sent++
	}
	ids := make([]MessageID, 0, sent)
	for range sent {
		select {
		case r := <-results:
			if r.err != nil {
				return ids, r.err
			}
			ids = append(ids, MessageID{LedgerID: r.pos.LedgerID, EntryID: r.pos.EntryID})
		case <-ctx.Done():
			return ids, fmt.Errorf("%w: waiting for the messages to be stored: %w", ErrUnavailable, ctx.Err())
		}
	}
	return ids, sendErr
}

// restClient is the front-end side of a REST producer: it lives for one request.
type restClient struct{}

func (restClient) Granted(*topics.Producer) {}
func (restClient) Disconnect()              {}
func (restClient) Refuse(error)             {}
func (restClient) Alive() bool              { return true }
func (restClient) Address() string          { return "REST" }
func (restClient) Version() string          { return "Pulsar REST" }

// servedPartitions is, in a cluster, the partitions of t (n of them) this broker serves, as
// Pulsar's TopicsBase.findOwnerBrokerForTopic: a REST produce to a partitioned topic without
// a partition publishes only to the partitions the receiving broker owns, and a broker that
// owns none sends the client to one that owns some (elsewhere). Every partition is looked
// up, with the request's authoritative flag; a failed lookup only leaves its partition out.
// Without a cluster every partition is served here (nil).
func (s *server) servedPartitions(ctx context.Context, r *http.Request, t topicRef, n int) (served []int, elsewhere string, err error) {
	if s.own == nil {
		return nil, "", nil
	}
	authoritative := r.URL.Query().Get("authoritative") == "true"
	self, urls := make([]bool, n), make([]string, n)
	_ = forPartitions(n, func(i int) error {
		res, err := s.own.Lookup(ctx, t.partition(i), authoritative)
		switch {
		case err != nil:
		case res.Self:
			self[i] = true
		case r.TLS != nil && res.HTTPURLTLS != "":
			urls[i] = res.HTTPURLTLS
		default:
			urls[i] = res.HTTPURL
		}
		return nil
	})
	served = []int{}
	for i := range n {
		if self[i] {
			served = append(served, i)
		} else if elsewhere == "" {
			elsewhere = urls[i]
		}
	}
	if len(served) == 0 && elsewhere == "" {
		return nil, "", withReason("Can't find owner of given topic.", fmt.Errorf("%w: no owner found for a partition of %s", resources.ErrNotFound, t))
	}
	return served, elsewhere, nil
}

// redirectTo is a 307 to the same request on the broker at httpURL, authoritative (it serves
// it, as the ownership layer's redirects).
func redirectTo(r *http.Request, httpURL string) bodyWriter {
	q := r.URL.Query()
	q.Set("authoritative", "true")
	return redirect(strings.TrimSuffix(httpURL, "/") + r.URL.EscapedPath() + "?" + q.Encode())
}

// redirect is a 307 answer to its URL.
type redirect string

func (u redirect) writeTo(w http.ResponseWriter) {
	w.Header().Set("Location", string(u))
	w.WriteHeader(http.StatusTemporaryRedirect)
}
