package functions

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// cleanupSubscription (FunctionConfig and SinkConfig, Pulsar's default true): when a function
// or sink is deleted, the subscriptions its instances read their inputs through are deleted
// too, so the deleted component leaves no backlog growing behind. Pulsar deletes them as each
// instance terminates; here the leader, which runs every delete, does it once every instance
// has let go: it asks the brokers' admin REST (BrokerWebServiceURL, with the worker's own
// credentials) to delete each subscription without force, which they refuse with 412 while a
// consumer is still connected, retries until the instances on every worker have stopped, and
// forces the delete after cleanupWait (an instance on a worker that hangs must not keep the
// subscription forever). A topicsPattern input is unsubscribed namespace-wide, as Pulsar does.

// cleanupWait is how long the leader waits for the instances of a deleted component to
// disconnect before it force-deletes their subscriptions; cleanupRetry how often it asks.
var (
	cleanupWait  = 2 * time.Minute
	cleanupRetry = 500 * time.Millisecond
)

// subCleanup is what to delete for one deleted component.
type subCleanup struct {
	fqfn, sub string
	topics    []string // full names
	patterns  []string // topicsPattern inputs
}

// cleanupOf is what deleting m leaves to clean up (ok false: nothing, or cleanupSubscription
// is false).
func cleanupOf(m *FunctionMeta) (subCleanup, bool) {
	c := subCleanup{fqfn: m.Config.FQFN}
	var specs map[string]ConsumerConfig
	switch m.ComponentType {
	case ComponentSource:
		return c, false
	case ComponentSink:
		if m.Sink == nil || !cleanupOn(m.Sink.CleanupSubscription) {
			return c, false
		}
		c.sub, specs = m.Sink.SourceSubscriptionName, m.Sink.InputSpecs
		if m.Sink.TopicsPattern != nil && *m.Sink.TopicsPattern != "" {
			c.patterns = append(c.patterns, *m.Sink.TopicsPattern)
		}
	default:
		if !cleanupOn(m.Config.CleanupSubscription) {
			return c, false
		}
		c.sub, specs = m.Config.SubName, m.Config.InputSpecs
	}
	if c.sub == "" {
		c.sub = c.fqfn // the instances' default (pkg/pf/conf.go:subscription, connector.Spec)
	}
	for t, spec := range specs {
		if spec.RegexPattern {
			c.patterns = append(c.patterns, t)
		} else {
			c.topics = append(c.topics, normTopic(t))
		}
	}
	return c, len(c.topics)+len(c.patterns) > 0
}

// cleanupOn is cleanupSubscription with Pulsar's default (unset: true).
func cleanupOn(v *bool) bool { return v == nil || *v }

// cleanupSubscriptions deletes what deleting m left behind, in the background (the delete
// request does not wait for instances on other workers to stop).
func (w *Worker) cleanupSubscriptions(m *FunctionMeta) {
	c, ok := cleanupOf(m)
	if !ok {
		return
	}
	if w.opts.BrokerWebServiceURL == "" {
		w.log.Warn("cleanupSubscription: the brokers' admin URL is not known (pulsarWebServiceUrl); the subscription stays",
			"function", c.fqfn, "subscription", c.sub)
		return
	}
	if w.ctx.Err() != nil {
		return // closing
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.runCleanup(w.ctx, c)
	}()
}

func (w *Worker) runCleanup(ctx context.Context, c subCleanup) {
	deadline := time.Now().Add(cleanupWait)
	type job struct{ method, path, what string }
	var jobs []job
	sub := url.PathEscape(c.sub)
	for _, t := range c.topics {
		dom, rest, _ := strings.Cut(t, "://")
		jobs = append(jobs, job{http.MethodDelete, "/admin/v2/" + dom + "/" + escapePath(rest) + "/subscription/" + sub, t})
	}
	for _, p := range c.patterns {
		tenant, ns := patternNamespace(p)
		jobs = append(jobs, job{http.MethodPost, "/admin/v2/namespaces/" + url.PathEscape(tenant) + "/" + url.PathEscape(ns) + "/unsubscribe/" + sub, "namespace " + tenant + "/" + ns})
	}
	for _, j := range jobs {
		for {
			force := time.Now().After(deadline) && j.method == http.MethodDelete
			code, err := w.brokerAdmin(ctx, j.method, j.path, force)
			switch {
			case err == nil && (code < 300 || code == http.StatusNotFound):
				w.log.Info("cleanupSubscription: subscription deleted", "function", c.fqfn, "subscription", c.sub, "topic", j.what, "force", force)
			case ctx.Err() != nil:
				return
			case force || (time.Now().After(deadline) && j.method != http.MethodDelete):
				w.log.Warn("cleanupSubscription: deleting the subscription failed; it stays", "function", c.fqfn,
					"subscription", c.sub, "topic", j.what, "status", code, "err", err)
			default:
				// 412: an instance still consumes; anything else may be a broker restarting.
				select {
				case <-ctx.Done():
					return
				case <-time.After(cleanupRetry):
				}
				continue
			}
			break
		}
	}
}

// brokerAdmin sends one request to the brokers' admin REST and returns its status.
func (w *Worker) brokerAdmin(ctx context.Context, method, path string, force bool) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	u := strings.TrimSuffix(w.opts.BrokerWebServiceURL, "/") + path
	if force {
		u += "?force=true"
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := w.httpClient().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotFound {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// httpClient is the worker's client towards brokers and other workers.
func (w *Worker) httpClient() *http.Client {
	if w.opts.HTTPClient != nil {
		return w.opts.HTTPClient
	}
	return http.DefaultClient
}

// escapePath escapes each segment of a slash-separated path.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// patternNamespace is the namespace a topicsPattern reads ([domain://]tenant/ns/regex; a
// bare regex is public/default's, as a short topic name is).
func patternNamespace(p string) (tenant, ns string) {
	if _, rest, ok := strings.Cut(p, "://"); ok {
		p = rest
	}
	if parts := strings.SplitN(p, "/", 3); len(parts) == 3 {
		return parts[0], parts[1]
	}
	return "public", "default"
}
