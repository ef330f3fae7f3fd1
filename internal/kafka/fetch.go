package kafka

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/magnetar-io/magnetar/internal/auth"
)

// Fetch (key 1), v4-v12.
//
// A fetch reads each partition from its fetch offset, up to the partition's max bytes and
// the request's max bytes (KIP-74: the first batch is returned whole even if larger, so a
// consumer always progresses), converting each stored entry into one Kafka record batch
// (records.go). If fewer than min bytes are ready it waits, up to max wait (capped by
// kafkaMaxFetchWaitMs), for any partition to receive data: a long poll that costs nothing
// while it waits. read_committed stops at the last stable offset (readPartition).
//
// Fetch sessions (KIP-227, v7+) let a consumer send only the partitions that changed:
// the session keeps each partition's fetch offset and what was last reported, and an
// incremental response lists only partitions with data, an error or new watermarks.
func handleFetch(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.FetchRequest)
	s := c.s
	resp := r.ResponseKind().(*kmsg.FetchResponse)

	parts, sess, incremental, err := s.sessions.resolve(r)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		reply(resp)
		return
	}
	if sess != nil {
		resp.SessionID = sess.id
	}
	denied := map[string]error{}
	for _, fp := range parts {
		if _, seen := denied[fp.topic]; !seen {
			denied[fp.topic] = c.authorizeName(c.ctx, fp.topic, auth.TopicConsume, "")
		}
	}
	wait := min(time.Duration(max(r.MaxWaitMillis, 0))*time.Millisecond, s.cfg.FetchWaitCap())
	go func() {
		deadline := time.Now().Add(wait)
		for {
			res, total, waits, errored := s.readFetch(c.ctx, parts, r, denied)
			if total >= int(r.MinBytes) || errored || !time.Now().Before(deadline) || c.ctx.Err() != nil || len(waits) == 0 {
				resp.Topics = sess.report(res, incremental)
				resp.ThrottleMillis = c.throttle(quotaConsume, total)
				reply(resp)
				return
			}
			waitAny(c.ctx, waits, deadline)
		}
	}()
}

// fetchPart is one partition a fetch reads.
type fetchPart struct {
	topic     string
	partition int32
	offset    int64
	maxBytes  int32
}

// partResult is what a fetch read from one partition.
type partResult struct {
	fp  fetchPart
	out kmsg.FetchResponseTopicPartition
}

// readFetch reads every partition once, returning the results, their bytes, the channels
// to wait on for partitions that had nothing, and whether any partition failed.
func (s *Server) readFetch(ctx context.Context, parts []fetchPart, r *kmsg.FetchRequest, denied map[string]error) ([]partResult, int, []<-chan struct{}, bool) {
	res := make([]partResult, 0, len(parts))
	total := 0
	var waits []<-chan struct{}
	errored := false
	budget := int(r.MaxBytes)
	if budget <= 0 {
		budget = 1 << 30
	}
	for _, fp := range parts {
		out := kmsg.NewFetchResponseTopicPartition()
		out.Partition = fp.partition
		out.PreferredReadReplica = -1
		limit := min(int(fp.maxBytes), budget)
		if total == 0 {
			limit = max(limit, 1) // the first data may exceed the limits (KIP-74)
		}
		err := denied[fp.topic]
		var p *partition
		if err == nil {
			p, _, err = s.openPartition(ctx, fp.topic, fp.partition)
		}
		if err == nil {
			var ch <-chan struct{}
			ch, err = s.readPartition(ctx, p, fp.offset, limit, r.IsolationLevel == 1, &out)
			if ch != nil {
				waits = append(waits, ch)
			}
		}
		if err != nil {
			out.ErrorCode = errorCode(err)
			out.RecordBatches = nil
			if out.HighWatermark == 0 && out.LogStartOffset == 0 {
				out.HighWatermark, out.LastStableOffset, out.LogStartOffset = -1, -1, -1
			}
			errored = true
			if !isUnknownTopic(err) && !isNotLeader(err) && !errors.Is(err, ErrOffsetOutOfRange) {
				s.log.Warn("kafka fetch failed", "topic", fp.topic, "partition", fp.partition, "err", err)
			}
		}
		total += len(out.RecordBatches)
		budget -= len(out.RecordBatches)
		res = append(res, partResult{fp: fp, out: out})
	}
	return res, total, waits, errored
}

// readPartition fills out from p starting at offset, at most limit bytes (at least one
// batch if any). It returns a channel that closes when more data may be readable, when it
// read nothing.
//
// read_committed (committed) reads below the last stable offset only; there, an aborted
// transaction's entry goes out as an empty batch covering its offsets (the form Kafka's
// compaction leaves, which every client steps over), so the broker filters aborted
// records and AbortedTransactions stays empty. read_uncommitted reads up to the high
// watermark and gets them as data. Markers are control batches either way.
func (s *Server) readPartition(ctx context.Context, p *partition, offset int64, limit int, committed bool, out *kmsg.FetchResponseTopicPartition) (<-chan struct{}, error) {
	hw, start := p.log.HighWatermark(), p.log.StartOffset()
	lso, err := p.log.LastStable(ctx)
	if err != nil {
		return nil, err
	}
	out.HighWatermark, out.LastStableOffset, out.LogStartOffset = hw, lso, start
	if offset < start || offset > hw {
		return nil, fmt.Errorf("%w: offset %d of %s is outside %d..%d", ErrOffsetOutOfRange, offset, p.name, start, hw)
	}
	bound := hw
	if committed {
		bound = lso
		out.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	}
	if offset >= bound {
		if bound < hw {
			// Held by an open transaction: its end moves the LSO without a wake-up of
			// its own (the marker's append wakes Wait just before the buffer lets go),
			// so look again shortly.
			return stablePoll(), nil
		}
		return p.log.Wait(offset), nil
	}
	entries, err := p.log.Read(ctx, offset, limit)
	if err != nil {
		return nil, err
	}
	// Sized from the stored entries (a Kafka batch is about as large as the entry it comes
	// from) so the response is not re-copied as it grows.
	stored := 0
	for _, e := range entries {
		stored += len(e.Data) + batchHeaderSize
	}
	buf := make([]byte, 0, min(stored, limit+limit/8))
	for i, e := range entries {
		if e.Base >= bound || i > 0 && len(buf) >= limit {
			break
		}
		var nb []byte
		switch {
		case e.Kind == EntryCommitMarker || e.Kind == EntryAbortMarker:
			nb = appendControlBatch(buf, e, e.Kind == EntryCommitMarker, p.owners.get)
		case e.Kind == EntryAborted && committed:
			nb = appendEmptyBatch(buf, e.Base, e.Count)
		default:
			nb, _, err = appendKafkaBatch(buf, e.Data, e.Base)
		}
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("%w: entry at offset %d of %s: %v", ErrCorruptMessage, e.Base, p.name, err)
			}
			break // the consumer gets what precedes it, then this error on its next fetch
		}
		if i > 0 && len(nb) > limit {
			break
		}
		buf = nb
	}
	out.RecordBatches = buf
	if len(buf) == 0 {
		return p.log.Wait(offset), nil
	}
	return nil, nil
}

// stablePollInterval is how often a read_committed fetch held at the last stable offset
// looks again.
const stablePollInterval = 20 * time.Millisecond

func stablePoll() <-chan struct{} {
	ch := make(chan struct{})
	time.AfterFunc(stablePollInterval, func() { close(ch) })
	return ch
}

// waitAny blocks until one of chans closes, ctx ends or deadline passes.
func waitAny(ctx context.Context, chans []<-chan struct{}, deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.C)})
	for _, ch := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	reflect.Select(cases)
}

// fetchSessions is the broker's incremental fetch session cache (bounded by
// kafkaMaxFetchSessions; when full the least recently used session is evicted and its
// consumer falls back to a full fetch with FETCH_SESSION_ID_NOT_FOUND).
type fetchSessions struct {
	mu   sync.Mutex
	max  int
	next int32
	m    map[int32]*fetchSession
}

type fetchSession struct {
	id    int32
	mu    sync.Mutex
	epoch int32 // the epoch the next request must carry
	used  time.Time
	parts []fetchPart
	state map[tpKey]sentState
}

type tpKey struct {
	topic     string
	partition int32
}

type sentState struct {
	hw, lso, start int64
	code           int16
}

func newFetchSessions(max int) *fetchSessions {
	return &fetchSessions{max: max, m: map[int32]*fetchSession{}}
}

// resolve turns a request into the partitions to read, using and updating its session.
func (fs *fetchSessions) resolve(r *kmsg.FetchRequest) ([]fetchPart, *fetchSession, bool, error) {
	fromRequest := func() []fetchPart {
		var out []fetchPart
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				out = append(out, fetchPart{topic: t.Topic, partition: p.Partition, offset: p.FetchOffset, maxBytes: p.PartitionMaxBytes})
			}
		}
		return out
	}
	switch {
	case r.Version < 7, r.SessionID == 0 && r.SessionEpoch == -1:
		return fromRequest(), nil, false, nil
	case r.SessionID != 0 && r.SessionEpoch == -1:
		fs.mu.Lock()
		delete(fs.m, r.SessionID)
		fs.mu.Unlock()
		return fromRequest(), nil, false, nil
	case r.SessionEpoch == 0:
		// A full fetch that opens a session; naming an old session id closes it.
		if r.SessionID != 0 {
			fs.mu.Lock()
			delete(fs.m, r.SessionID)
			fs.mu.Unlock()
		}
		parts := fromRequest()
		sess := fs.create(parts)
		return parts, sess, false, nil
	case r.SessionID == 0:
		return nil, nil, false, kerr.InvalidFetchSessionEpoch
	}
	fs.mu.Lock()
	sess := fs.m[r.SessionID]
	fs.mu.Unlock()
	if sess == nil {
		return nil, nil, false, kerr.FetchSessionIDNotFound
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if r.SessionEpoch != sess.epoch {
		return nil, nil, false, kerr.InvalidFetchSessionEpoch
	}
	sess.epoch++
	sess.used = time.Now()
	forget := map[tpKey]bool{}
	for _, t := range r.ForgottenTopics {
		for _, p := range t.Partitions {
			forget[tpKey{t.Topic, p}] = true
		}
	}
	update := map[tpKey]fetchPart{}
	for _, fp := range fromRequest() {
		update[tpKey{fp.topic, fp.partition}] = fp
	}
	var parts []fetchPart
	for _, fp := range sess.parts {
		k := tpKey{fp.topic, fp.partition}
		if forget[k] {
			delete(sess.state, k)
			continue
		}
		if u, ok := update[k]; ok {
			fp = u
			delete(update, k)
		}
		parts = append(parts, fp)
	}
	for _, fp := range fromRequest() {
		if _, ok := update[tpKey{fp.topic, fp.partition}]; ok {
			parts = append(parts, fp)
		}
	}
	sess.parts = parts
	return parts, sess, true, nil
}

func (fs *fetchSessions) create(parts []fetchPart) *fetchSession {
	if fs.max <= 0 {
		return nil
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.m) >= fs.max {
		var oldest *fetchSession
		for _, s := range fs.m {
			if oldest == nil || s.used.Before(oldest.used) {
				oldest = s
			}
		}
		delete(fs.m, oldest.id)
	}
	for {
		fs.next++
		if fs.next <= 0 {
			fs.next = 1
		}
		if fs.m[fs.next] == nil {
			break
		}
	}
	s := &fetchSession{id: fs.next, epoch: 1, used: time.Now(), parts: parts, state: map[tpKey]sentState{}}
	fs.m[s.id] = s
	return s
}

// report builds the response's topics: every partition for a full fetch, only those with
// data, an error or new watermarks for an incremental one. It records in the session what
// was reported.
func (s *fetchSession) report(res []partResult, incremental bool) []kmsg.FetchResponseTopic {
	if s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	var topics []kmsg.FetchResponseTopic
	index := map[string]int{}
	for i := range res {
		fp, out := res[i].fp, res[i].out
		if s != nil {
			k := tpKey{fp.topic, fp.partition}
			now := sentState{hw: out.HighWatermark, lso: out.LastStableOffset, start: out.LogStartOffset, code: out.ErrorCode}
			prev, ok := s.state[k]
			changed := !ok || prev != now || len(out.RecordBatches) > 0 || out.ErrorCode != 0
			s.state[k] = now
			if incremental && !changed {
				continue
			}
		}
		ti, ok := index[fp.topic]
		if !ok {
			t := kmsg.NewFetchResponseTopic()
			t.Topic = fp.topic
			ti = len(topics)
			index[fp.topic] = ti
			topics = append(topics, t)
		}
		topics[ti].Partitions = append(topics[ti].Partitions, out)
	}
	return topics
}
