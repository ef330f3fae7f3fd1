package kafka

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/magnetar-io/magnetar/internal/auth"
)

// Admin APIs: CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords,
// DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, InitProducerId.
//
// A Kafka topic with N partitions is a Pulsar partitioned topic with N partitions (N=1
// too, so that CreatePartitions can grow it later); the replication factor is accepted and
// ignored: durability is the namespace's ensemble / write / ack quorum.

// topicConfigs are the topic-level configs Magnetar maps (Backend.Configs/SetConfigs).
// Anything else is INVALID_CONFIG, so a user learns at once that a setting has no effect.
var topicConfigs = map[string]func(string) error{
	"retention.ms":      intConfig(-1),
	"retention.bytes":   intConfig(-1),
	"max.message.bytes": intConfig(0),
	"cleanup.policy": func(v string) error {
		if v != "delete" {
			return fmt.Errorf("only cleanup.policy=delete is supported")
		}
		return nil
	},
}

// readOnlyTopicConfigs are reported by DescribeConfigs so tools show familiar values.
var readOnlyTopicConfigs = map[string]string{
	"cleanup.policy":         "delete",
	"compression.type":       "producer",
	"message.timestamp.type": "CreateTime",
	"min.insync.replicas":    "1",
}

func intConfig(min int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < min {
			return fmt.Errorf("must be an integer >= %d", min)
		}
		return nil
	}
}

func checkConfig(name string, value *string) error {
	check, ok := topicConfigs[name]
	if !ok {
		return fmt.Errorf("%w: topic config %q is not supported", ErrInvalidConfig, name)
	}
	if value == nil {
		return nil
	}
	if err := check(*value); err != nil {
		return fmt.Errorf("%w: %s=%s: %v", ErrInvalidConfig, name, *value, err)
	}
	return nil
}

func handleCreateTopics(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.CreateTopicsRequest)
	s := c.s
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, t.NumPartitions, t.ReplicationFactor
		err := func() error {
			ref, err := s.namer.Resolve(t.Topic)
			if err != nil {
				return err
			}
			if err := c.authorize(c.ctx, ref, auth.TopicAdmin, ""); err != nil {
				return err
			}
			rt.TopicID = topicID(ref.Full())
			if len(t.ReplicaAssignment) > 0 {
				return fmt.Errorf("%w: manual replica assignment is not supported (bookies hold the replicas)", ErrInvalidRequest)
			}
			n := int(t.NumPartitions)
			if n == -1 {
				_, n = s.be.AutoCreate(c.ctx, ref.Tenant, ref.Namespace)
				n = max(n, 1)
				rt.NumPartitions = int32(n)
			}
			if n < 1 {
				return fmt.Errorf("%w: %d partitions", ErrInvalidPartitions, n)
			}
			if t.ReplicationFactor == 0 || t.ReplicationFactor < -1 {
				return fmt.Errorf("%w: replication factor %d", kerr.InvalidReplicationFactor, t.ReplicationFactor)
			}
			if rt.ReplicationFactor == -1 {
				rt.ReplicationFactor = 1
			}
			cfg := map[string]string{}
			for _, kv := range t.Configs {
				if err := checkConfig(kv.Name, kv.Value); err != nil {
					return err
				}
				if kv.Value != nil {
					cfg[kv.Name] = *kv.Value
				}
			}
			if r.ValidateOnly {
				if _, err := s.be.Partitions(c.ctx, ref.Full()); err == nil {
					return fmt.Errorf("%w: %s", ErrTopicExists, t.Topic)
				}
				return nil
			}
			if err := s.be.CreateTopic(c.ctx, ref.Full(), n, cfg); err != nil {
				return err
			}
			s.forgetTopic(ref.Full())
			// v5+ answers with the topic's configs; the Java admin client requires them.
			for _, k := range slices.Sorted(maps.Keys(cfg)) {
				rt.Configs = append(rt.Configs, kmsg.CreateTopicsResponseTopicConfig{Name: k, Value: kmsg.StringPtr(cfg[k]),
					Source: int8(kmsg.ConfigSourceDynamicTopicConfig)})
			}
			for _, k := range slices.Sorted(maps.Keys(readOnlyTopicConfigs)) {
				if _, ok := cfg[k]; !ok {
					rt.Configs = append(rt.Configs, kmsg.CreateTopicsResponseTopicConfig{Name: k, Value: kmsg.StringPtr(readOnlyTopicConfigs[k]),
						ReadOnly: true, Source: int8(kmsg.ConfigSourceDefaultConfig)})
				}
			}
			return nil
		}()
		rt.ErrorCode, rt.ErrorMessage = errorCode(err), errorMessage(err)
		if err != nil {
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
		} else if rt.Configs == nil {
			rt.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	reply(resp)
}

func handleDeleteTopics(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.DeleteTopicsRequest)
	s := c.s
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	names := r.TopicNames
	if r.Version >= 6 {
		names = nil
		for _, t := range r.Topics {
			if t.Topic == nil {
				resp.Topics = append(resp.Topics, kmsg.DeleteTopicsResponseTopic{TopicID: t.TopicID, ErrorCode: kerr.UnknownTopicID.Code,
					ErrorMessage: kmsg.StringPtr("deleting by topic id is not supported; name the topic")})
				continue
			}
			names = append(names, *t.Topic)
		}
	}
	for _, name := range names {
		rt := kmsg.DeleteTopicsResponseTopic{Topic: kmsg.StringPtr(name)}
		err := func() error {
			ref, err := s.namer.Resolve(name)
			if err != nil {
				return err
			}
			rt.TopicID = topicID(ref.Full())
			if err := c.authorize(c.ctx, ref, auth.TopicAdmin, ""); err != nil {
				return err
			}
			s.forgetTopic(ref.Full())
			return s.be.DeleteTopic(c.ctx, ref.Full())
		}()
		if err == nil {
			s.dropTopicPartitions(name)
		}
		rt.ErrorCode, rt.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Topics = append(resp.Topics, rt)
	}
	reply(resp)
}

// dropTopicPartitions forgets the open partitions of a deleted topic.
func (s *Server) dropTopicPartitions(kafkaName string) {
	ref, err := s.namer.Resolve(kafkaName)
	if err != nil {
		return
	}
	full := ref.Full()
	s.mu.Lock()
	for name := range s.logs {
		if name == full || len(name) > len(full) && name[:len(full)] == full && name[len(full):len(full)+len(partitionSuffix)] == partitionSuffix {
			delete(s.logs, name)
		}
	}
	s.mu.Unlock()
}

func handleCreatePartitions(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.CreatePartitionsRequest)
	s := c.s
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, t := range r.Topics {
		err := func() error {
			ref, err := s.namer.Resolve(t.Topic)
			if err != nil {
				return err
			}
			if err := c.authorize(c.ctx, ref, auth.TopicAdmin, ""); err != nil {
				return err
			}
			n, err := s.partitionCount(c.ctx, ref.Full(), true)
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("%w: %s is a non-partitioned Pulsar topic", ErrInvalidPartitions, t.Topic)
			}
			if int(t.Count) <= n {
				return fmt.Errorf("%w: %s has %d partitions; the count can only grow", ErrInvalidPartitions, t.Topic, n)
			}
			if len(t.Assignment) > 0 {
				return fmt.Errorf("%w: manual replica assignment is not supported", ErrInvalidRequest)
			}
			if r.ValidateOnly {
				return nil
			}
			s.forgetTopic(ref.Full())
			return s.be.AddPartitions(c.ctx, ref.Full(), int(t.Count))
		}()
		resp.Topics = append(resp.Topics, kmsg.CreatePartitionsResponseTopic{Topic: t.Topic, ErrorCode: errorCode(err), ErrorMessage: errorMessage(err)})
	}
	reply(resp)
}

// handleDeleteRecords moves each partition's start offset: -1 means the high watermark.
func handleDeleteRecords(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.DeleteRecordsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.DeleteRecordsResponseTopicPartition{Partition: p.Partition, LowWatermark: -1}
			err := c.authorizeName(c.ctx, t.Topic, auth.TopicAdmin, "")
			var part *partition
			if err == nil {
				part, _, err = c.s.openPartition(c.ctx, t.Topic, p.Partition)
			}
			if err == nil {
				off, hw := p.Offset, part.log.HighWatermark()
				if off == -1 {
					off = hw
				}
				if off < 0 || off > hw {
					err = fmt.Errorf("%w: offset %d, high watermark %d", ErrOffsetOutOfRange, off, hw)
				} else if err = part.log.Truncate(c.ctx, off); err == nil {
					rp.LowWatermark = part.log.StartOffset()
				}
			}
			rp.ErrorCode = errorCode(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	reply(resp)
}

func handleDescribeConfigs(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.DescribeConfigsRequest)
	s := c.s
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, res := range r.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		add := func(name, value string, isDefault, readOnly bool) {
			if res.ConfigNames != nil && !slices.Contains(res.ConfigNames, name) {
				return
			}
			cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
			cfg.Name, cfg.Value, cfg.ReadOnly, cfg.IsDefault = name, kmsg.StringPtr(value), readOnly, isDefault
			cfg.Source = kmsg.ConfigSourceDynamicTopicConfig
			if isDefault {
				cfg.Source = kmsg.ConfigSourceDefaultConfig
			}
			rr.Configs = append(rr.Configs, cfg)
		}
		var err error
		switch res.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			var ref TopicRef
			if ref, err = s.namer.Resolve(res.ResourceName); err == nil {
				err = c.authorize(c.ctx, ref, auth.TopicLookup, "")
			}
			if err == nil {
				var cfgs map[string]string
				if cfgs, err = s.be.Configs(c.ctx, ref.Full()); err == nil {
					seen := map[string]bool{}
					for _, k := range slices.Sorted(maps.Keys(cfgs)) {
						add(k, cfgs[k], false, false)
						seen[k] = true
					}
					for _, k := range slices.Sorted(maps.Keys(readOnlyTopicConfigs)) {
						if !seen[k] {
							add(k, readOnlyTopicConfigs[k], true, true)
						}
					}
				}
			}
		case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
			if res.ResourceName != "" && res.ResourceName != strconv.Itoa(int(s.nodeID)) {
				err = fmt.Errorf("%w: broker %s is not this broker (%d)", ErrInvalidRequest, res.ResourceName, s.nodeID)
				break
			}
			add("broker.id", strconv.Itoa(int(s.nodeID)), false, true)
			add("message.max.bytes", strconv.Itoa(s.maxMsg), false, true)
			add("auto.create.topics.enable", "true", true, true)
		default:
			err = fmt.Errorf("%w: config resource type %d", ErrInvalidRequest, res.ResourceType)
		}
		rr.ErrorCode, rr.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Resources = append(resp.Resources, rr)
	}
	reply(resp)
}

// handleAlterConfigs replaces a topic's settings (the non-incremental API: configs not
// named are reset to their defaults).
func handleAlterConfigs(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.AlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, res := range r.Resources {
		set := map[string]*string{}
		for k := range topicConfigs {
			set[k] = nil
		}
		var err error
		for _, kv := range res.Configs {
			if err = checkConfig(kv.Name, kv.Value); err != nil {
				break
			}
			set[kv.Name] = kv.Value
		}
		if err == nil {
			err = c.s.alterTopicConfigs(c, res.ResourceType, res.ResourceName, set, r.ValidateOnly)
		}
		resp.Resources = append(resp.Resources, kmsg.AlterConfigsResponseResource{ResourceType: res.ResourceType, ResourceName: res.ResourceName,
			ErrorCode: errorCode(err), ErrorMessage: errorMessage(err)})
	}
	reply(resp)
}

func handleIncrementalAlterConfigs(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.IncrementalAlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, res := range r.Resources {
		set := map[string]*string{}
		var err error
		for _, kv := range res.Configs {
			switch kv.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				err = checkConfig(kv.Name, kv.Value)
				set[kv.Name] = kv.Value
			case kmsg.IncrementalAlterConfigOpDelete:
				err = checkConfig(kv.Name, nil)
				set[kv.Name] = nil
			default:
				err = fmt.Errorf("%w: %s: only SET and DELETE apply to single-valued configs", ErrInvalidConfig, kv.Name)
			}
			if err != nil {
				break
			}
		}
		if err == nil {
			err = c.s.alterTopicConfigs(c, res.ResourceType, res.ResourceName, set, r.ValidateOnly)
		}
		resp.Resources = append(resp.Resources, kmsg.IncrementalAlterConfigsResponseResource{ResourceType: res.ResourceType, ResourceName: res.ResourceName,
			ErrorCode: errorCode(err), ErrorMessage: errorMessage(err)})
	}
	reply(resp)
}

func (s *Server) alterTopicConfigs(c *conn, typ kmsg.ConfigResourceType, name string, set map[string]*string, validateOnly bool) error {
	if typ != kmsg.ConfigResourceTypeTopic {
		return fmt.Errorf("%w: only topic configs can be altered (broker settings are Magnetar's config keys)", ErrInvalidRequest)
	}
	ref, err := s.namer.Resolve(name)
	if err != nil {
		return err
	}
	if err := c.authorize(c.ctx, ref, auth.TopicAdmin, ""); err != nil {
		return err
	}
	if _, err := s.partitionCount(c.ctx, ref.Full(), true); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	return s.be.SetConfigs(c.ctx, ref.Full(), set)
}

// handleInitProducerID hands out producer ids for idempotent producers; one with a
// transactional id goes to the transaction coordinator (txn.go). A producer that asks
// with its current id and epoch (KIP-360, v3+) gets the epoch bumped, which resets its
// sequences.
func handleInitProducerID(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil {
		// It may abort the id's open transaction (every partition's marker): off the read
		// loop, as EndTxn.
		go func() {
			err := c.s.initTxnProducer(c.ctx, c, r, resp) // txn.go
			c.s.logTxnErr("InitProducerId", *r.TransactionalID, err)
			if err != nil {
				resp.ProducerID, resp.ProducerEpoch = -1, -1
			}
			resp.ErrorCode = errorCode(err)
			reply(resp)
		}()
		return
	}
	err := func() error {
		if r.Version >= 3 && r.ProducerID >= 0 && r.ProducerEpoch >= 0 && r.ProducerEpoch < maxEpoch {
			resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.ProducerEpoch+1
			return nil
		}
		// A new producer, or one whose epoch is exhausted: a fresh id.
		id, err := c.s.be.NextProducerID(c.ctx)
		if err != nil {
			return err
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return nil
	}()
	resp.ErrorCode = errorCode(err)
	reply(resp)
}

const maxEpoch = int16(32767)
