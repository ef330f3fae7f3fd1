package ownership

import (
	"context"
	"time"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// Per-bundle load: at each load report the owner sums its loaded topics' counts and running
// totals per held bundle and turns the totals into rates against the previous sample. The
// stats go into the load report (the leader sheds the busiest bundles of an overloaded
// broker, shed.go) and drive automatic splits (split.go).

// BundleStats is one held bundle's load over the last report interval.
type BundleStats struct {
	Topics    int     `json:"topics"`
	Sessions  int     `json:"sessions"`  // producers + consumers
	MsgRate   float64 `json:"msgRate"`   // messages/s, in + out
	Bandwidth float64 `json:"bytesRate"` // bytes/s, in + out

	bundle resources.Bundle
}

// bundleSample is the previous sample's totals per bundle name.
type bundleSample struct {
	at           time.Time
	msgs, nbytes map[string]int64
}

// sampleBundles computes the stats of every held bundle with loaded topics; nil when the
// broker cannot list its topics.
func (m *Manager) sampleBundles(ctx context.Context, prev *bundleSample) map[string]BundleStats {
	m.mu.Lock()
	lister, _ := m.unloader.(TopicLister)
	m.mu.Unlock()
	if lister == nil {
		return nil
	}
	now := time.Now()
	per := map[string]BundleStats{}
	msgs, nbytes := map[string]int64{}, map[string]int64{}
	for _, tl := range lister.LoadedTopicLoads() {
		b, err := m.BundleOf(ctx, tl.Topic)
		if err != nil || !m.Owned(b) {
			continue
		}
		k := b.String()
		st := per[k]
		st.bundle = b
		st.Topics++
		st.Sessions += tl.Sessions
		per[k] = st
		msgs[k] += tl.MsgsTotal
		nbytes[k] += tl.BytesTotal
	}
	if !prev.at.IsZero() {
		secs := now.Sub(prev.at).Seconds()
		for k, st := range per {
			st.MsgRate = rate(msgs[k], prev.msgs[k], secs)
			st.Bandwidth = rate(nbytes[k], prev.nbytes[k], secs)
			per[k] = st
		}
	}
	prev.at, prev.msgs, prev.nbytes = now, msgs, nbytes
	return per
}
