package ownership

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Load shedding: the leader moves bundles away from a broker that holds clearly more than
// the least loaded one. It only unloads (the owner releases the bundle); the next lookup of
// one of its topics assigns it to the least loaded broker (leastLoaded), so no broker is
// ever told to take a bundle it cannot serve.
//
// Rule, every ShedInterval: among live brokers, if the one with the most bundles has at
// least two more than the one with the fewest, unload one of its bundles (the highest
// range, so the choice is stable). At most one bundle moves per interval, and none while a
// bundle shed earlier is still unowned (its clients have not come back yet), for at most
// shedGraceIntervals intervals: shedding must not strip a broker whose bundles simply have no
// traffic to re-home them.

// shedGraceIntervals bounds how long an earlier shed bundle blocks the next one.
const shedGraceIntervals = 5

// shedLoop runs while this broker is the leader (ctx ends with the leadership).
func (m *Manager) shedLoop(ctx context.Context) {
	if m.shedInterval <= 0 {
		return
	}
	t := time.NewTicker(m.shedInterval)
	defer t.Stop()
	var pending string
	var pendingSince time.Time
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
		bundle, from, err := m.shedOnce(ctx, owners)
		if err != nil {
			m.log.Warn("load shedding", "err", err)
			continue
		}
		if bundle != "" {
			m.log.Info("load shedding: bundle unloaded", "bundle", bundle, "from", from)
			pending, pendingSince = bundle, time.Now()
		}
	}
}

// shedOnce applies the rule once; it returns the bundle unloaded ("" for none).
func (m *Manager) shedOnce(ctx context.Context, owners map[string]OwnerData) (string, string, error) {
	live, err := m.LiveBrokers(ctx)
	if err != nil {
		return "", "", err
	}
	if len(live) < 2 {
		return "", "", nil
	}
	byInstance := map[string][]string{}
	for bundle, od := range owners {
		byInstance[od.Instance] = append(byInstance[od.Instance], bundle)
	}
	type load struct {
		bi      BrokerInfo
		bundles []string
	}
	var loads []load
	for _, bi := range live {
		loads = append(loads, load{bi: bi, bundles: byInstance[bi.Instance]})
	}
	sort.Slice(loads, func(i, j int) bool {
		if len(loads[i].bundles) != len(loads[j].bundles) {
			return len(loads[i].bundles) < len(loads[j].bundles)
		}
		return loads[i].bi.WebServiceURL < loads[j].bi.WebServiceURL
	})
	least, most := loads[0], loads[len(loads)-1]
	if len(most.bundles)-len(least.bundles) < 2 {
		return "", "", nil
	}
	sort.Strings(most.bundles)
	bundle := most.bundles[len(most.bundles)-1]
	if err := m.unloadAt(ctx, most.bi, bundle); err != nil {
		return "", "", err
	}
	return bundle, most.bi.WebServiceURL, nil
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
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("ownership: unloading %s at %s: %w", bundle, owner.WebServiceURL, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("ownership: unloading %s at %s: HTTP %d", bundle, owner.WebServiceURL, resp.StatusCode)
	}
	return nil
}
