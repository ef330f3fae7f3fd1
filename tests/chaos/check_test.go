package chaos

import (
	"fmt"
	"slices"
	"strings"
)

// subResult is what the checker found on one subscription.
type subResult struct {
	Received   int `json:"received"`
	Lost       int `json:"lost"`       // acknowledged, never delivered
	Unexpected int `json:"unexpected"` // delivered, never sent
	Duplicated int `json:"duplicated"` // one payload stored at two message ids
	Reordered  int `json:"reordered"`  // per producer (exclusive, failover) or per key (key_shared)
	Recovered  int `json:"recovered"`  // indeterminate sends that were delivered
}

// result is a scenario's JSON result (the goal table's figures).
type result struct {
	Scenario           string                `json:"scenario"`
	Seed               uint64                `json:"seed"`
	Valid              bool                  `json:"valid"`
	Dedup              bool                  `json:"dedup"`
	AttemptCount       int                   `json:"attempt-count"`
	AcknowledgedCount  int                   `json:"acknowledged-count"`
	InfoCount          int                   `json:"info-count"`
	LostCount          int                   `json:"lost-count"`
	UnexpectedCount    int                   `json:"unexpected-count"`
	DuplicatedCount    int                   `json:"duplicated-count"`
	ReorderedCount     int                   `json:"reordered-count"`
	RecoveredCount     int                   `json:"recovered-count"`
	Subscriptions      map[string]*subResult `json:"subscriptions"`
	Linearizable       string                `json:"linearizable,omitempty"` // porcupine over the metadata records: ok, illegal, unknown
	MetadataOps        int                   `json:"metadata-ops,omitempty"`
	MaxUnavailabilityS float64               `json:"max-unavailability-s"`
	RecoveryS          float64               `json:"recovery-s"` // heal to the first acknowledged send after it
	Faults             []faultEvent          `json:"faults"`
	DurationS          float64               `json:"duration-s"`
	Problems           []string              `json:"problems,omitempty"`
	NotCovered         string                `json:"not-covered,omitempty"`
	LostExamples       []string              `json:"lost-examples,omitempty"`
}

// check computes the counts of a history. Lost: acknowledged sends never received on a
// subscription (every subscription must get every message). Duplicated: a payload received
// at two distinct message ids (stored twice; redeliveries of one id are not duplicates).
// Reordered: on exclusive and failover subscriptions, a producer's sequence going backwards
// among first deliveries of new payloads; on key_shared the same per (producer, the key of
// the entry's first message).
func check(ops []op, dedup bool, subs []string) *result {
	r := &result{Dedup: dedup, Subscriptions: map[string]*subResult{}}
	attempted := map[string]bool{}
	acked := map[string]map[string]bool{} // topic -> payloads
	for _, o := range ops {
		if o.Kind != "send" {
			continue
		}
		p := fmt.Sprintf("%s:%d", o.Producer, o.Seq)
		attempted[p] = true
		r.AttemptCount++
		if o.Type == "ok" {
			if acked[o.Topic] == nil {
				acked[o.Topic] = map[string]bool{}
			}
			acked[o.Topic][p] = true
			r.AcknowledgedCount++
		} else {
			r.InfoCount++
		}
	}
	type key struct{ prod, k string }
	// A batch entry travels whole to one consumer, dispatched by one key: Key_Shared's order
	// holds per the key of the entry's first message.
	entryKey := map[string]string{}
	for _, o := range ops {
		if o.Kind == "recv" && strings.HasSuffix(o.ID, ":0") {
			entryKey[o.Sub+"/"+strings.TrimSuffix(o.ID, ":0")] = fmt.Sprint(o.Seq % 8)
		}
	}
	for _, sub := range subs {
		topicAcked := acked[sub[:strings.LastIndex(sub, "/")]]
		sr := &subResult{}
		r.Subscriptions[sub] = sr
		ids := map[string]map[string]bool{} // payload -> message ids
		seenID := map[string]bool{}
		last := map[key]int64{}
		keyed := strings.HasSuffix(sub, "/keyshared")
		ordered := keyed || strings.HasSuffix(sub, "/exclusive") || strings.HasSuffix(sub, "/failover")
		for _, o := range ops {
			if o.Kind != "recv" || o.Sub != sub {
				continue
			}
			p := fmt.Sprintf("%s:%d", o.Producer, o.Seq)
			if ids[p] == nil {
				ids[p] = map[string]bool{}
			}
			again := len(ids[p]) > 0 && !ids[p][o.ID] // the payload stored once more (a duplicate)
			ids[p][o.ID] = true
			if seenID[o.ID] || again {
				continue // a redelivery, or a duplicate (counted as such, not as a reorder)
			}
			seenID[o.ID] = true
			if !ordered {
				continue
			}
			k := key{prod: o.Producer}
			if keyed {
				k.k = entryKey[sub+"/"+o.ID[:strings.LastIndex(o.ID, ":")]]
			}
			if prev, ok := last[k]; ok && o.Seq < prev {
				sr.Reordered++
			}
			last[k] = max(last[k], o.Seq)
		}
		for p, set := range ids {
			sr.Received++
			if !attempted[p] {
				sr.Unexpected++
			}
			if len(set) > 1 {
				sr.Duplicated += len(set) - 1
			}
			if attempted[p] && !topicAcked[p] {
				sr.Recovered++
			}
		}
		var lost []string
		for p := range topicAcked {
			if ids[p] == nil {
				lost = append(lost, p)
			}
		}
		slices.Sort(lost)
		sr.Lost = len(lost)
		if len(r.LostExamples) < 10 {
			r.LostExamples = append(r.LostExamples, lost[:min(len(lost), 10-len(r.LostExamples))]...)
		}
		r.LostCount += sr.Lost
		r.UnexpectedCount += sr.Unexpected
		r.DuplicatedCount += sr.Duplicated
		r.ReorderedCount += sr.Reordered
		r.RecoveredCount = max(r.RecoveredCount, sr.Recovered)
	}
	r.Valid = r.LostCount == 0 && r.UnexpectedCount == 0 && r.ReorderedCount == 0 && (!dedup || r.DuplicatedCount == 0)
	return r
}

// unavailability is the longest gap between acknowledgements of sends (by completion time),
// a proxy for the longest time the cluster accepted no writes.
func unavailability(ops []op) float64 {
	var done []int64
	for _, o := range ops {
		if o.Kind == "send" && o.Type == "ok" {
			done = append(done, o.Done.UnixNano())
		}
	}
	slices.Sort(done)
	var gap int64
	for i := 1; i < len(done); i++ {
		gap = max(gap, done[i]-done[i-1])
	}
	return float64(gap) / 1e9
}
