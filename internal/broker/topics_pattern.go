package broker

import (
	"encoding/hex"
	"hash/crc32"
	"regexp"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// GET_TOPICS_OF_NAMESPACE with topics_pattern and topics_hash (regex subscriptions). With
// broker-side evaluation on (enableBrokerSideSubscriptionPatternEvaluation) and a pattern
// no longer than subscriptionPatternMaxLength that compiles, the broker returns only the
// matching topics and says so (filtered). topics_hash is Pulsar's: CRC32C of the sorted
// names joined with ",", printed as Guava prints a 32-bit hash (the four bytes
// little-endian, in hex). A client sending the hash of what it already has gets
// changed=false and no list.

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// topicsHash is Pulsar's TopicList.calculateHash.
func topicsHash(topics []string) string {
	sorted := append([]string(nil), topics...)
	sort.Strings(sorted)
	sum := crc32.Checksum([]byte(strings.Join(sorted, ",")), crc32c)
	return hex.EncodeToString([]byte{byte(sum), byte(sum >> 8), byte(sum >> 16), byte(sum >> 24)})
}

// compileTopicsPattern turns a client's pattern into a full-match regexp over topic names
// without their scheme ("persistent://"), as Pulsar matches them. ok is false when the
// broker should not filter (evaluation off, pattern too long, or not valid RE2).
func (s *Server) compileTopicsPattern(pattern string) (*regexp.Regexp, bool) {
	cfg := &s.cfg.Delivery
	if pattern == "" || !cfg.EnableBrokerSideSubscriptionPatternEvaluation || len(pattern) > cfg.SubscriptionPatternMaxLength {
		return nil, false
	}
	if _, rest, found := strings.Cut(pattern, "://"); found {
		pattern = rest
	}
	re, err := regexp.Compile("^(?:" + pattern + ")$")
	if err != nil {
		return nil, false // the client filters itself when filtered is false
	}
	return re, true
}

// topicsOfNamespaceResponse builds the answer for the namespace's topics (system topics
// already removed): filtered by the request's pattern when possible, with the hash.
func (s *Server) topicsOfNamespaceResponse(cmd *pb.CommandGetTopicsOfNamespace, list []string) *pb.CommandGetTopicsOfNamespaceResponse {
	resp := &pb.CommandGetTopicsOfNamespaceResponse{RequestId: proto.Uint64(cmd.GetRequestId()), Filtered: proto.Bool(false)}
	if re, ok := s.compileTopicsPattern(cmd.GetTopicsPattern()); ok {
		out := make([]string, 0, len(list))
		for _, t := range list {
			base := t
			if n, err := topics.ParseName(t); err == nil {
				base = n.Base().String() // partitions match by their topic's name
			}
			if _, rest, found := strings.Cut(base, "://"); found && re.MatchString(rest) {
				out = append(out, t)
			}
		}
		list = out
		resp.Filtered = proto.Bool(true)
	}
	hash := topicsHash(list)
	resp.TopicsHash = proto.String(hash)
	if cmd.TopicsHash != nil && cmd.GetTopicsHash() == hash {
		resp.Changed = proto.Bool(false)
		return resp
	}
	resp.Changed = proto.Bool(true)
	resp.Topics = list
	return resp
}
