package kafka

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

type source struct {
	opts        []kgo.Opt
	topic       string
	commitEvery time.Duration
	headers     bool
	unknown     []string // consumerConfigProperties we do not honour (warned at Run)

	cl *kgo.Client
	mu sync.Mutex
	// trackers are per assigned partition: the next offset to commit once every record
	// below it is published.
	trackers  map[int32]*connector.Tracker[int64]
	committed map[int32]int64
	log       func(msg string, args ...any)
}

func (s *source) Validate(c connector.Config) error {
	c, props, unknown := withProperties(c, consumerProps, consumerOnly) // props.go
	s.unknown = unknown
	opts, topic := clientOpts(c)
	group := c.Required("groupId")
	reset := kgo.NewOffset().AtStart()
	if c.OneOf("autoOffsetReset", "earliest", "earliest", "latest") == "latest" {
		reset = kgo.NewOffset().AtEnd()
	}
	s.opts = append(opts, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchMinBytes(int32(c.IntRange("fetchMinBytes", 1, 1, 1<<30))),
		kgo.SessionTimeout(c.Millis("sessionTimeoutMs", 30*time.Second)),
		kgo.HeartbeatInterval(c.Millis("heartbeatIntervalMs", 3*time.Second)),
		kgo.OnPartitionsRevoked(s.revoked), kgo.OnPartitionsLost(s.lost))
	s.opts = append(s.opts, props...)
	s.topic = topic
	s.commitEvery = c.Millis("autoCommitIntervalMs", 5*time.Second)
	if s.commitEvery <= 0 {
		s.commitEvery = 5 * time.Second
	}
	s.headers = c.Bool("copyHeadersEnabled", false)
	return nil
}

func (s *source) Run(ctx context.Context, sc connector.SourceContext) error {
	s.log = sc.Logger().Info
	warnUnknown(sc.Logger(), consumerProps, s.unknown)
	s.trackers, s.committed = map[int32]*connector.Tracker[int64]{}, map[int32]int64{}
	cl, err := kgo.NewClient(s.opts...)
	if err != nil {
		return wrapKafka("client", err)
	}
	s.mu.Lock()
	s.cl = cl
	s.mu.Unlock()
	lastCommit := time.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, s.commitEvery)
		fs := cl.PollRecords(pctx, 1000)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(lastCommit) >= s.commitEvery {
			s.commit(ctx, nil)
			lastCommit = time.Now()
		}
		for _, fe := range fs.Errors() {
			if fe.Err == context.DeadlineExceeded || fe.Err == context.Canceled {
				continue
			}
			// franz-go retries fetches itself; these are reported and survived.
			sc.SourceException(wrapKafka("fetch "+fe.Topic, fe.Err))
		}
		var emitErr error
		fs.EachRecord(func(r *kgo.Record) {
			if emitErr != nil {
				return
			}
			rec := &connector.Record{Key: string(r.Key), Value: r.Value, EventTime: r.Timestamp}
			if s.headers && len(r.Headers) > 0 {
				rec.Properties = make(map[string]string, len(r.Headers))
				for _, h := range r.Headers {
					rec.Properties[h.Key] = string(h.Value)
				}
			}
			rec.OnAck = s.tracker(r.Partition).Add(r.Offset+1, true)
			emitErr = sc.Emit(ctx, rec)
		})
		if emitErr != nil {
			return emitErr
		}
	}
}

func (s *source) tracker(p int32) *connector.Tracker[int64] {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.trackers[p]
	if t == nil {
		t = &connector.Tracker[int64]{}
		s.trackers[p] = t
	}
	return t
}

// commit commits each partition's published prefix (only the partitions in only, if set).
func (s *source) commit(ctx context.Context, only map[string][]int32) {
	s.mu.Lock()
	offsets := map[int32]kgo.EpochOffset{}
	var want map[int32]bool
	if only != nil {
		want = map[int32]bool{}
		for _, p := range only[s.topic] {
			want[p] = true
		}
	}
	for p, t := range s.trackers {
		if want != nil && !want[p] {
			continue
		}
		if off, ok := t.Committable(); ok && off > s.committed[p] {
			offsets[p] = kgo.EpochOffset{Epoch: -1, Offset: off}
		}
	}
	cl := s.cl
	s.mu.Unlock()
	if len(offsets) == 0 || cl == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	cl.CommitOffsetsSync(cctx, map[string]map[int32]kgo.EpochOffset{s.topic: offsets},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				s.log("kafka source: committing offsets failed; they are committed again later", "err", err)
				return
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode == 0 {
						s.committed[p.Partition] = offsets[p.Partition].Offset
					}
				}
			}
		})
}

// revoked commits what the partitions going away have published; what is still in flight
// is read again by their next owner (at-least-once).
func (s *source) revoked(ctx context.Context, _ *kgo.Client, parts map[string][]int32) {
	s.commit(ctx, parts)
	s.forget(parts)
}

func (s *source) lost(_ context.Context, _ *kgo.Client, parts map[string][]int32) { s.forget(parts) }

func (s *source) forget(parts map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range parts[s.topic] {
		delete(s.trackers, p)
		delete(s.committed, p)
	}
}

// Close commits what was published and leaves the group.
func (s *source) Close() error {
	s.mu.Lock()
	cl := s.cl
	s.mu.Unlock()
	if cl == nil {
		return nil
	}
	s.commit(context.Background(), nil)
	cl.Close()
	return nil
}
