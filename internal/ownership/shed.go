package ownership

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Load shedding: the leader moves bundles away from an overloaded broker. It only unloads
// (the owner releases the bundle); the next lookup of one of its topics asks the leader,
// which assigns it to the least loaded broker (assign.go), so no broker is ever told to
// take a bundle it cannot serve.
//
// Rules, every ShedInterval (planShedding):
//
//  1. By load, as Pulsar's ThresholdShedder: the broker with the highest load score
//     (loadscore.go) sheds when its score exceeds the average of all live brokers by more
//     than ThresholdPercent. It unloads its bundles with the highest message rate (from its
//     report's bundleStats) until they carry (score - average - threshold + 5)% of its
//     message rate, always keeping one bundle.
//  2. Otherwise by count: if the broker with the most bundles has at least two more than
//     the one with the fewest, it unloads one (the highest range, so the choice is stable).
//
// A bundle shed is not shed again for Grace, so it cannot bounce between brokers. No
// shedding happens while a bundle shed earlier is still unowned (its clients have not come
// back yet), for at most shedGraceIntervals intervals: shedding must not strip a broker
// whose bundles simply have no traffic to re-home them.

// shedGraceIntervals bounds how long an earlier shed bundle blocks the next one.
const shedGraceIntervals = 5

// shedMarginPercent is Pulsar's ADDITIONAL_THRESHOLD_PERCENT_MARGIN: shed a little more than
// the excess, so the broker ends under the threshold rather than on it.
const shedMarginPercent = 5

// ShedConfig is the load rule of shedding.
type ShedConfig struct {
	// ThresholdPercent: load score points above the average before a broker sheds.
	ThresholdPercent float64
	// Grace: a bundle shed is not shed again for this long.
	Grace time.Duration
}

func (c ShedConfig) withDefaults() ShedConfig {
	if c.ThresholdPercent <= 0 {
		c.ThresholdPercent = 10
	}
	if c.Grace <= 0 {
		c.Grace = 30 * time.Minute
	}
	return c
}

// shedLoop runs while this broker is the leader (ctx ends with the leadership).
func (m *Manager) shedLoop(ctx context.Context) {
	if m.shedInterval <= 0 {
		return
	}
	t := time.NewTicker(m.shedInterval)
	defer t.Stop()
	var pending string
	var pendingSince time.Time
	recent := map[string]time.Time{} // bundle -> when it was shed
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		owners, err := m.Owners(ctx)
		if err != nil {
			continue
		}
		if pending != "" {
			if _, owned := owners[pending]; !owned && time.Since(pendingSince) < shedGraceIntervals*m.shedInterval {
				continue
			}
			pending = ""
		}
		for b, at := range recent {
			if time.Since(at) > m.shed.Grace {
				delete(recent, b)
			}
		}
		live, err := m.LiveBrokers(ctx)
		if err != nil {
			continue
		}
		from, bundles, why := planShedding(m.shed, m.score, live, owners, recent)
		for _, bundle := range bundles {
			if err := m.unloadAt(ctx, from, bundle); err != nil {
				m.log.Warn("load shedding", "bundle", bundle, "err", err)
				continue
			}
			m.log.Info("load shedding: bundle unloaded", "bundle", bundle, "from", from.WebServiceURL, "rule", why)
			recent[bundle] = time.Now()
			if pending == "" {
				pending, pendingSince = bundle, time.Now()
			}
		}
	}
}

// planShedding applies the rules once to the live brokers' reports and the ownership keys:
// the broker to shed from and its bundles to unload (none: nothing to do), and the rule
// that chose them. recent bundles are in their grace period.
func planShedding(sc ShedConfig, score ScoreConfig, live map[string]BrokerInfo, owners map[string]OwnerData, recent map[string]time.Time) (BrokerInfo, []string, string) {
	if len(live) < 2 {
		return BrokerInfo{}, nil, ""
	}
	byInstance := map[string][]string{}
	for bundle, od := range owners {
		byInstance[od.Instance] = append(byInstance[od.Instance], bundle)
	}
	type load struct {
		bi      BrokerInfo
		score   float64
		bundles []string // all held, sorted
	}
	var loads []load
	var sum float64
	for _, bi := range live {
		l := load{bi: bi, score: score.Score(bi.Load), bundles: byInstance[bi.Instance]}
		sort.Strings(l.bundles)
		sum += l.score
		loads = append(loads, l)
	}
	avg := sum / float64(len(loads))
	movable := func(l load) []string {
		var out []string
		for _, b := range l.bundles {
			if _, ok := recent[b]; !ok {
				out = append(out, b)
			}
		}
		return out
	}

	// 1. By load.
	sort.Slice(loads, func(i, j int) bool {
		if loads[i].score != loads[j].score {
			return loads[i].score > loads[j].score
		}
		return loads[i].bi.WebServiceURL < loads[j].bi.WebServiceURL
	})
	if top := loads[0]; top.score > avg+sc.ThresholdPercent && len(top.bundles) > 1 && top.bi.Load != nil {
		cand := movable(top)
		rates := top.bi.Load.BundleStats
		var total float64
		for _, b := range top.bundles {
			total += rates[b].MsgRate
		}
		sort.SliceStable(cand, func(i, j int) bool { return rates[cand[i]].MsgRate > rates[cand[j]].MsgRate })
		want := total * min(1, (top.score-avg-sc.ThresholdPercent+shedMarginPercent)/100)
		var out []string
		var moved float64
		for _, b := range cand {
			if moved >= want || len(out) == len(top.bundles)-1 || rates[b].MsgRate == 0 {
				break
			}
			out = append(out, b)
			moved += rates[b].MsgRate
		}
		if len(out) > 0 {
			return top.bi, out, "load"
		}
	}

	// 2. By count.
	sort.Slice(loads, func(i, j int) bool {
		if len(loads[i].bundles) != len(loads[j].bundles) {
			return len(loads[i].bundles) < len(loads[j].bundles)
		}
		return loads[i].bi.WebServiceURL < loads[j].bi.WebServiceURL
	})
	least, most := loads[0], loads[len(loads)-1]
	if len(most.bundles)-len(least.bundles) < 2 {
		return BrokerInfo{}, nil, ""
	}
	if cand := movable(most); len(cand) > 0 {
		return most.bi, cand[len(cand)-1:], "count"
	}
	return BrokerInfo{}, nil, ""
}

// unloadAt releases a bundle on its owner: directly when that is us, else through the
// owner's admin API.
func (m *Manager) unloadAt(ctx context.Context, owner BrokerInfo, bundle string) error {
	i := strings.LastIndexByte(bundle, '/')
	if i < 0 {
		return fmt.Errorf("ownership: bad bundle name %q", bundle)
	}
	ns, rng := bundle[:i], bundle[i+1:]
	if owner.Instance == m.self.Instance {
		b, err := m.bundleByRange(ctx, ns, rng)
		if err != nil {
			return err
		}
		return m.ReleaseBundle(ctx, b)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut,
		strings.TrimSuffix(owner.WebServiceURL, "/")+"/admin/v2/namespaces/"+ns+"/"+rng+"/unload", nil)
	if err != nil {
		return err
	}
	resp, err := m.httpc.Do(req)
	if err != nil {
		return fmt.Errorf("ownership: unloading %s at %s: %w", bundle, owner.WebServiceURL, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("ownership: unloading %s at %s: HTTP %d", bundle, owner.WebServiceURL, resp.StatusCode)
	}
	return nil
}
