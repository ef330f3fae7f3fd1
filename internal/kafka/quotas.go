package kafka

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// Kafka client quotas (KIP-546: DescribeClientQuotas, AlterClientQuotas; kafka-configs
// --entity-type users/clients/ips). Each entity (a user, a client id, a user and client
// id, or an ip; any name may be the type's default) has one record in the metadata store
// holding its settings, so every broker and a restart see the same. producer_byte_rate
// and consumer_byte_rate are enforced (quota_enforce.go); request_percentage,
// controller_mutation_rate and connection_creation_rate are stored and described only.
// Both APIs are for superusers, as Kafka asks for DESCRIBE_CONFIGS / ALTER_CONFIGS on the
// cluster.

// Quota entity types.
const (
	quotaUser     = "user"
	quotaClientID = "client-id"
	quotaIP       = "ip"
)

// quotaKeys are the settings each entity type takes, and whether a value must be whole
// (Kafka's LONG and INT keys; request_percentage and controller_mutation_rate are DOUBLE).
var quotaKeys = map[string]map[string]bool{
	quotaUser:     {"producer_byte_rate": true, "consumer_byte_rate": true, "request_percentage": false, "controller_mutation_rate": false},
	quotaClientID: {"producer_byte_rate": true, "consumer_byte_rate": true, "request_percentage": false, "controller_mutation_rate": false},
	quotaIP:       {"connection_creation_rate": true},
}

// quotaEntityKey checks an entity as Kafka does (known types, none twice, ip alone and a
// valid address) and returns it sorted by type with its record name: "type:name" (name
// query-escaped) or "type" for the default, joined with ",".
func quotaEntityKey(entity []resources.KafkaQuotaEntity) ([]resources.KafkaQuotaEntity, string, error) {
	if len(entity) == 0 {
		return nil, "", fmt.Errorf("%w: an empty client quota entity", ErrInvalidRequest)
	}
	sorted := slices.Clone(entity)
	slices.SortFunc(sorted, func(a, b resources.KafkaQuotaEntity) int { return strings.Compare(a.Type, b.Type) })
	parts := make([]string, 0, len(sorted))
	for i, e := range sorted {
		if _, ok := quotaKeys[e.Type]; !ok {
			return nil, "", fmt.Errorf("%w: unknown client quota entity type %q", ErrInvalidRequest, e.Type)
		}
		if i > 0 && sorted[i-1].Type == e.Type {
			return nil, "", fmt.Errorf("%w: entity type %q named twice", ErrInvalidRequest, e.Type)
		}
		if e.Type == quotaIP && len(sorted) > 1 {
			return nil, "", fmt.Errorf("%w: an ip quota entity cannot be combined with a user or client id", ErrInvalidRequest)
		}
		if e.Type == quotaIP && e.Name != nil && net.ParseIP(*e.Name) == nil {
			return nil, "", fmt.Errorf("%w: %q is not an ip address", ErrInvalidRequest, *e.Name)
		}
		if e.Name == nil {
			parts = append(parts, e.Type)
		} else {
			parts = append(parts, e.Type+":"+url.QueryEscape(*e.Name))
		}
	}
	return sorted, strings.Join(parts, ","), nil
}

// handleDescribeClientQuotas (key 48, v0-v1) lists the stored entities that match every
// filter component (0: that name, 1: the default, 2: any name of the type), and with
// Strict only those with no other entity type, with their settings.
func handleDescribeClientQuotas(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.DescribeClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	go func() {
		entries, err := c.s.describeQuotas(c, r)
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		if err == nil {
			resp.Entries = entries
		}
		reply(resp)
	}()
}

func (s *Server) describeQuotas(c *conn, r *kmsg.DescribeClientQuotasRequest) ([]kmsg.DescribeClientQuotasResponseEntry, error) {
	if err := c.superUser("describe client quotas of"); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, comp := range r.Components {
		switch {
		case quotaKeys[comp.EntityType] == nil:
			return nil, fmt.Errorf("%w: unknown quota entity type %q", ErrInvalidRequest, comp.EntityType)
		case comp.MatchType < 0 || comp.MatchType > 2:
			return nil, fmt.Errorf("%w: unknown quota match type %d", ErrInvalidRequest, comp.MatchType)
		case comp.MatchType == 0 && comp.Match == nil:
			return nil, fmt.Errorf("%w: an exact match on %q names nothing", ErrInvalidRequest, comp.EntityType)
		case seen[comp.EntityType]:
			return nil, fmt.Errorf("%w: entity type %q filtered twice", ErrInvalidRequest, comp.EntityType)
		}
		seen[comp.EntityType] = true
	}
	if seen[quotaIP] && len(seen) > 1 {
		return nil, fmt.Errorf("%w: ip quotas cannot be filtered with users or client ids", ErrInvalidRequest)
	}
	ctx, cancel := context.WithTimeout(c.ctx, adminTimeout)
	defer cancel()
	qs, err := s.be.ClientQuotas(ctx)
	if err != nil {
		return nil, err
	}
	out := []kmsg.DescribeClientQuotasResponseEntry{}
	for _, q := range qs {
		if !quotaMatches(q.Entity, r.Components, r.Strict) {
			continue
		}
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, ent := range q.Entity {
			e.Entity = append(e.Entity, kmsg.DescribeClientQuotasResponseEntryEntity{Type: ent.Type, Name: ent.Name})
		}
		keys := make([]string, 0, len(q.Values))
		for k := range q.Values {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e.Values = append(e.Values, kmsg.DescribeClientQuotasResponseEntryValue{Key: k, Value: q.Values[k]})
		}
		out = append(out, e)
	}
	return out, nil
}

// quotaMatches tells whether entity passes every component, and under strict has no type
// the components do not name.
func quotaMatches(entity []resources.KafkaQuotaEntity, comps []kmsg.DescribeClientQuotasRequestComponent, strict bool) bool {
	for _, comp := range comps {
		i := slices.IndexFunc(entity, func(e resources.KafkaQuotaEntity) bool { return e.Type == comp.EntityType })
		if i < 0 {
			return false
		}
		name := entity[i].Name
		switch comp.MatchType {
		case 0:
			if name == nil || *name != *comp.Match {
				return false
			}
		case 1:
			if name != nil {
				return false
			}
		}
	}
	return !strict || len(entity) == len(comps)
}

// handleAlterClientQuotas (key 49, v0-v1) sets and removes settings per entity, each
// entity in one atomic update of its record (all its operations or none). Per entity:
// INVALID_REQUEST for a bad entity, an unknown key for its type, a key named twice, or a
// value that is not a positive number (a whole one for the byte and connection rates);
// CLUSTER_AUTHORIZATION_FAILED but for superusers. ValidateOnly checks and stores nothing.
func handleAlterClientQuotas(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.AlterClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	go func() {
		ctx, cancel := context.WithTimeout(c.ctx, adminTimeout)
		defer cancel()
		authErr := c.superUser("alter client quotas of")
		for _, e := range r.Entries {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			entity := make([]resources.KafkaQuotaEntity, 0, len(e.Entity))
			for _, ent := range e.Entity {
				re.Entity = append(re.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: ent.Type, Name: ent.Name})
				entity = append(entity, resources.KafkaQuotaEntity{Type: ent.Type, Name: ent.Name})
			}
			err := authErr
			if err == nil {
				err = c.s.alterQuota(ctx, entity, e.Ops, r.ValidateOnly)
			}
			if err != nil {
				c.s.log.Debug("kafka AlterClientQuotas refused", "entity", entity, "err", err)
			}
			re.ErrorCode, re.ErrorMessage = errorCode(err), errorMessage(err)
			resp.Entries = append(resp.Entries, re)
		}
		reply(resp)
	}()
}

func (s *Server) alterQuota(ctx context.Context, entity []resources.KafkaQuotaEntity, ops []kmsg.AlterClientQuotasRequestEntryOp, validateOnly bool) error {
	sorted, key, err := quotaEntityKey(entity)
	if err != nil {
		return err
	}
	// Every entity type of one entity takes the same keys (user and client-id agree; ip
	// is alone).
	allowed := quotaKeys[sorted[0].Type]
	named := map[string]bool{}
	for _, op := range ops {
		whole, ok := allowed[op.Key]
		switch {
		case !ok:
			return fmt.Errorf("%w: %q is not a quota of a %s entity", ErrInvalidRequest, op.Key, sorted[0].Type)
		case named[op.Key]:
			return fmt.Errorf("%w: quota %q named twice", ErrInvalidRequest, op.Key)
		case op.Remove:
		case !(op.Value > 0) || math.IsInf(op.Value, 0):
			return fmt.Errorf("%w: quota %s = %v is not a positive number", ErrInvalidRequest, op.Key, op.Value)
		case whole && (op.Value != math.Trunc(op.Value) || op.Value > math.MaxInt64):
			return fmt.Errorf("%w: quota %s = %v is not a whole number", ErrInvalidRequest, op.Key, op.Value)
		}
		named[op.Key] = true
	}
	if validateOnly {
		return nil
	}
	err = s.be.UpdateClientQuota(ctx, key, func(q *resources.KafkaQuota) error {
		q.Entity = sorted
		for _, op := range ops {
			if op.Remove {
				delete(q.Values, op.Key)
			} else {
				q.Values[op.Key] = op.Value
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// This broker enforces the change at once (others within quotaRefresh, as this one
	// if the reload fails: the change itself is stored).
	if err := s.reloadQuotas(ctx); err != nil {
		s.log.Warn("kafka client quotas could not be read again after an alter", "err", err)
	}
	return nil
}
