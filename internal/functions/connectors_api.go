package functions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/io/connector"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// Sources and sinks (Pulsar IO) are instances of the same worker with component type SOURCE
// or SINK: their records live beside functions' (one name space per tenant/namespace, as in
// Pulsar), the scheduler places them like functions, and an instance runs a built-in
// connector in process (connectorRuntime). The REST paths are Pulsar's:
//
//	/admin/v3/sources/{tenant}/{namespace}/{name}       POST/PUT (multipart sourceConfig), GET, DELETE
//	/admin/v3/sources/{tenant}/{namespace}              GET: names
//	.../{name}/status, .../{name}/{i}/status            SourceStatus / SourceInstanceStatusData
//	.../{name}/start|stop|restart, .../{name}/{i}/...   instance actions
//	/admin/v3/sources/builtinsources                    ConnectorDefinitions
//	/admin/v3/sources/builtinsources/{type}/configdefinition
//	/admin/v3/sources/reloadBuiltInSources
//
// and the same under /admin/v3/sinks with sinkConfig, builtinsinks and reloadBuiltInSinks.
// .../{name}/stats (FunctionStats shape) is ours: Pulsar has no stats for connectors.
type connectorKind struct {
	component ComponentType
	kind      connector.Kind
	base      string // /admin/v3/sources
	noun      string // source
	field     string // sourceConfig
	builtins  string // builtinsources
	reload    string // reloadBuiltInSources
}

var (
	sourceKind = connectorKind{ComponentSource, connector.KindSource, "/admin/v3/sources", "source", "sourceConfig", "builtinsources", "reloadBuiltInSources"}
	sinkKind   = connectorKind{ComponentSink, connector.KindSink, "/admin/v3/sinks", "sink", "sinkConfig", "builtinsinks", "reloadBuiltInSinks"}
)

// ComponentOfPath says whether an admin path is a function's, a source's or a sink's (for
// the composition root's Authorize, which checks the matching namespace permission).
func ComponentOfPath(path string) ComponentType {
	switch {
	case strings.HasPrefix(path, "/admin/v3/sources"), strings.HasPrefix(path, "/admin/v2/sources"):
		return ComponentSource
	case strings.HasPrefix(path, "/admin/v3/sinks"), strings.HasPrefix(path, "/admin/v2/sinks"):
		return ComponentSink
	}
	return ComponentFunction
}

func (w *Worker) connectorRoutes(mux *http.ServeMux) {
	// Pulsar serves connectors under v3; pulsaradmin asks its configured version (v2 by
	// default), so both are served as for functions.
	v2 := func(k connectorKind) connectorKind {
		k.base = strings.Replace(k.base, "/v3/", "/v2/", 1)
		return k
	}
	for _, k := range []connectorKind{sourceKind, sinkKind, v2(sourceKind), v2(sinkKind)} {
		fn := k.base + "/{tenant}/{namespace}/{name}"
		mux.HandleFunc("GET "+k.base+"/"+k.builtins, w.handle(func(*http.Request) (any, error) { return w.builtinList(k), nil }))
		mux.HandleFunc("GET "+k.base+"/"+k.builtins+"/{type}/configdefinition", w.handle(func(r *http.Request) (any, error) { return w.configDefinition(k, r) }))
		mux.HandleFunc("POST "+k.base+"/"+k.reload, w.handle(func(*http.Request) (any, error) { w.connectors.Reload(); return nil, nil }))
		mux.HandleFunc("POST "+fn, w.write(w.connectorCreate(k)))
		mux.HandleFunc("PUT "+fn, w.write(w.connectorUpdate(k)))
		mux.HandleFunc("DELETE "+fn, w.write(w.ofKind(k, w.deleteFunction)))
		mux.HandleFunc("GET "+fn, w.handle(w.ofKind(k, w.connectorGet)))
		mux.HandleFunc("GET "+k.base+"/{tenant}/{namespace}", w.handle(w.connectorList(k)))
		mux.HandleFunc("GET "+fn+"/status", w.handle(w.ofKind(k, w.connectorStatus(k, -1))))
		mux.HandleFunc("GET "+fn+"/stats", w.handle(w.ofKind(k, w.functionStats)))
		mux.HandleFunc("GET "+fn+"/{id}/status", w.handle(w.ofKind(k, func(r *http.Request) (any, error) {
			id, err := w.instanceID(r, r.PathValue("id"))
			if err != nil {
				return nil, err
			}
			return w.connectorStatus(k, id)(r)
		})))
		mux.HandleFunc("GET "+fn+"/{id}/stats", w.handle(w.ofKind(k, func(r *http.Request) (any, error) {
			id, err := w.instanceID(r, r.PathValue("id"))
			if err != nil {
				return nil, err
			}
			return w.instanceStats(r, id)
		})))
		for _, a := range []string{"start", "stop", "restart"} {
			mux.HandleFunc("POST "+fn+"/"+a, w.handle(w.ofKind(k, func(r *http.Request) (any, error) {
				return w.forwardWrite(r, func(r *http.Request) (any, error) { return w.instanceAction(r, a, -1) })
			})))
			mux.HandleFunc("POST "+fn+"/{id}/"+a, w.handle(w.ofKind(k, func(r *http.Request) (any, error) {
				id, err := w.instanceID(r, r.PathValue("id"))
				if err != nil {
					return nil, err
				}
				return w.forwardWrite(r, func(r *http.Request) (any, error) { return w.instanceAction(r, a, id) })
			})))
		}
	}
}

// ofKind runs h only when the path names a connector of kind k (a function or the other
// kind by that name is a 404, as in Pulsar).
func (w *Worker) ofKind(k connectorKind, h func(*http.Request) (any, error)) func(*http.Request) (any, error) {
	return func(r *http.Request) (any, error) {
		m, _, err := w.meta.get(r.Context(), fqfnOf(r))
		if err != nil || m.ComponentType != k.component {
			return nil, fmt.Errorf("%w: %s %s does not exist", ErrNotFound, k.noun, fqfnOf(r))
		}
		return h(r)
	}
}

// ConnectorDefinition is Pulsar's ConnectorDefinition.
type ConnectorDefinition struct {
	Name              string `json:"name"`
	Description       string `json:"description"`
	SourceClass       string `json:"sourceClass,omitempty"`
	SinkClass         string `json:"sinkClass,omitempty"`
	SourceConfigClass string `json:"sourceConfigClass,omitempty"`
	SinkConfigClass   string `json:"sinkConfigClass,omitempty"`
}

func definitionOf(d *connector.Definition) ConnectorDefinition {
	return ConnectorDefinition{Name: d.Name, Description: d.Description, SourceClass: d.SourceClass, SinkClass: d.SinkClass}
}

func (w *Worker) builtinList(k connectorKind) []ConnectorDefinition {
	defs := w.connectors.Sinks()
	if k.kind == connector.KindSource {
		defs = w.connectors.Sources()
	}
	out := []ConnectorDefinition{}
	for _, d := range defs {
		out = append(out, definitionOf(d))
	}
	return out
}

// allConnectors is /admin/v2/functions/connectors and /worker/connectors: every built-in.
func (w *Worker) allConnectors(*http.Request) (any, error) {
	out := []ConnectorDefinition{}
	for _, n := range w.connectors.Names() {
		if d, err := w.connectors.Lookup(n); err == nil {
			out = append(out, definitionOf(d))
		}
	}
	return out, nil
}

func (w *Worker) configDefinition(k connectorKind, r *http.Request) (any, error) {
	d, err := w.connectors.Lookup(r.PathValue("type"))
	if err != nil {
		return nil, fmt.Errorf("%w: built-in %s %s", ErrNotFound, k.noun, r.PathValue("type"))
	}
	fields := d.SinkFields
	if k.kind == connector.KindSource {
		fields = d.SourceFields
	}
	if fields == nil {
		fields = []connector.Field{}
	}
	return fields, nil
}

// readConnectorUpload reads the multipart body of a create or update: the config part
// (sourceConfig / sinkConfig) and, optionally, url. A package (data) is refused: only
// built-in connectors run here.
func (w *Worker) readConnectorUpload(r *http.Request, k connectorKind, into any) (found bool, err error) {
	r.Body = http.MaxBytesReader(nil, r.Body, maxConfigBytes+w.cfg.MaxPackageSizeMB<<20)
	if err := r.ParseMultipartForm(maxConfigBytes); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return false, fmt.Errorf("%w: request too large", errTooLarge)
		}
		return false, badField("body", "want multipart/form-data with %s: %v", k.field, err)
	}
	if fh := r.MultipartForm.File["data"]; len(fh) > 0 {
		return false, badField("data", "connector packages (.nar) cannot run on Magnetar: use a built-in connector (archive builtin://<name>)")
	}
	var raw []byte
	if v := r.MultipartForm.Value[k.field]; len(v) > 0 {
		raw = []byte(v[0])
	} else if fh := r.MultipartForm.File[k.field]; len(fh) > 0 {
		f, err := fh[0].Open()
		if err != nil {
			return false, err
		}
		defer f.Close()
		if raw, err = io.ReadAll(io.LimitReader(f, maxConfigBytes)); err != nil {
			return false, err
		}
	}
	if raw == nil {
		return false, nil
	}
	if err := decodeStrict(k.field, raw, into); err != nil {
		return false, err
	}
	return true, nil
}

// urlArchive is the url part when it names a built-in (pulsar-admin --archive builtin://x
// sends it so); any other url is refused.
func urlArchive(r *http.Request) (string, error) {
	v := r.MultipartForm.Value["url"]
	if len(v) == 0 || strings.TrimSpace(v[0]) == "" {
		return "", nil
	}
	u := strings.TrimSpace(v[0])
	if !strings.HasPrefix(u, connector.BuiltinPrefix) {
		return "", badField("url", "%q: only built-in connectors (builtin://<name>) run on Magnetar", u)
	}
	return u, nil
}

// connectorMeta builds the record of a source or sink from its normalized config.
func connectorMeta(k connectorKind, src *SourceConfig, sink *SinkConfig) *FunctionMeta {
	m := &FunctionMeta{ComponentType: k.component, Version: 1, CreateTime: time.Now().UnixMilli()}
	if src != nil {
		m.Source = src
		m.Config = functionConfigOf(src.Tenant, src.Namespace, src.Name, src.Parallelism, src.Resources, src.ProcessingGuarantees)
		m.Config.Output = src.TopicName
	} else {
		m.Sink = sink
		m.Config = functionConfigOf(sink.Tenant, sink.Namespace, sink.Name, sink.Parallelism, sink.Resources, sink.ProcessingGuarantees)
		m.Config.Inputs = sink.inputList()
	}
	return m
}

func (w *Worker) connectorCreate(k connectorKind) func(*http.Request) (any, error) {
	return func(r *http.Request) (any, error) {
		ctx := r.Context()
		var src *SourceConfig
		var sink *SinkConfig
		var into any
		if k.kind == connector.KindSource {
			src = &SourceConfig{}
			into = src
		} else {
			sink = &SinkConfig{}
			into = sink
		}
		found, err := w.readConnectorUpload(r, k, into)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, badField(k.field, "missing")
		}
		archive, err := urlArchive(r)
		if err != nil {
			return nil, err
		}
		t, ns, n := r.PathValue("tenant"), r.PathValue("namespace"), r.PathValue("name")
		if src != nil {
			if archive != "" {
				src.Archive = archive
			}
			err = w.normalizeSource(src, t, ns, n)
		} else {
			if archive != "" {
				sink.Archive = archive
			}
			err = w.normalizeSink(sink, t, ns, n)
		}
		if err != nil {
			return nil, err
		}
		if err := w.checkNamespace(ctx, t, ns); err != nil {
			return nil, err
		}
		if _, _, err := w.meta.get(ctx, fqfnOf(r)); err == nil {
			return nil, fmt.Errorf("%w: %s %s", ErrExists, k.noun, fqfnOf(r))
		}
		m := connectorMeta(k, src, sink)
		if err := w.meta.put(ctx, m, metadata.NotExists); err != nil {
			return nil, err
		}
		w.log.Info(k.noun+" created", k.noun, fqfnOf(r), "parallelism", m.Config.Parallelism)
		return nil, nil
	}
}

func (w *Worker) connectorUpdate(k connectorKind) func(*http.Request) (any, error) {
	return func(r *http.Request) (any, error) {
		ctx := r.Context()
		fqfn := fqfnOf(r)
		old, ver, err := w.meta.get(ctx, fqfn)
		if err != nil || old.ComponentType != k.component {
			return nil, fmt.Errorf("%w: %s %s does not exist", ErrNotFound, k.noun, fqfn)
		}
		t, ns, n := r.PathValue("tenant"), r.PathValue("namespace"), r.PathValue("name")
		var m *FunctionMeta
		if k.kind == connector.KindSource {
			merged, err := updatedConnector(w, r, k, *old.Source, mergeSource, func(c *SourceConfig) *string { return &c.Archive },
				func(c *SourceConfig) error { return w.normalizeSource(c, t, ns, n) })
			if err != nil {
				return nil, err
			}
			m = connectorMeta(k, merged, nil)
		} else {
			merged, err := updatedConnector(w, r, k, *old.Sink, mergeSink, func(c *SinkConfig) *string { return &c.Archive },
				func(c *SinkConfig) error { return w.normalizeSink(c, t, ns, n) })
			if err != nil {
				return nil, err
			}
			m = connectorMeta(k, nil, merged)
		}
		m.Version, m.CreateTime = old.Version+1, old.CreateTime
		m.InstanceStates, m.Restarts = old.InstanceStates, old.Restarts
		if err := w.meta.put(ctx, m, ver); err != nil {
			return nil, err
		}
		w.log.Info(k.noun+" updated", k.noun, fqfn, "version", m.Version)
		return nil, nil
	}
}

// mergeSource applies an update: the fields it sets replace the old ones (pulsar-admin's
// update sends only what changed).
// updatedConnector is an update of one connector's config: old, overlaid with the uploaded
// config when there is one and with the archive named in the URL, then normalized.
func updatedConnector[C any](w *Worker, r *http.Request, k connectorKind, old C, merge func(dst, u *C),
	archive func(*C) *string, normalize func(*C) error) (*C, error) {
	upd := new(C)
	found, err := w.readConnectorUpload(r, k, upd)
	if err != nil {
		return nil, err
	}
	merged := old
	if found {
		merge(&merged, upd)
	}
	a, err := urlArchive(r)
	if err != nil {
		return nil, err
	}
	if a != "" {
		*archive(&merged) = a
	}
	if err := normalize(&merged); err != nil {
		return nil, err
	}
	return &merged, nil
}

func mergeSource(dst, u *SourceConfig) {
	setStr(&dst.ClassName, u.ClassName)
	setStr(&dst.TopicName, u.TopicName)
	setStr(&dst.SerdeClassName, u.SerdeClassName)
	setStr(&dst.SchemaType, u.SchemaType)
	setStr(&dst.ProcessingGuarantees, u.ProcessingGuarantees)
	setStr(&dst.Archive, u.Archive)
	setStr(&dst.RuntimeFlags, u.RuntimeFlags)
	setStr(&dst.CustomRuntimeOptions, u.CustomRuntimeOptions)
	setStr(&dst.BatchBuilder, u.BatchBuilder)
	setStr(&dst.LogTopic, u.LogTopic)
	if u.SourceType != "" {
		dst.Archive = connector.BuiltinPrefix + u.SourceType
	}
	if u.ProducerConfig != nil {
		dst.ProducerConfig = u.ProducerConfig
	}
	if u.Configs != nil {
		dst.Configs = u.Configs
	}
	if u.Secrets != nil {
		dst.Secrets = u.Secrets
	}
	if u.Parallelism != 0 {
		dst.Parallelism = u.Parallelism
	}
	if u.Resources != nil {
		dst.Resources = u.Resources
	}
}

func mergeSink(dst, u *SinkConfig) {
	setStr(&dst.ClassName, u.ClassName)
	setStr(&dst.SourceSubscriptionPosition, u.SourceSubscriptionPosition)
	setStr(&dst.DeadLetterTopic, u.DeadLetterTopic)
	setStr(&dst.ProcessingGuarantees, u.ProcessingGuarantees)
	setStr(&dst.Archive, u.Archive)
	setStr(&dst.RuntimeFlags, u.RuntimeFlags)
	setStr(&dst.CustomRuntimeOptions, u.CustomRuntimeOptions)
	setStr(&dst.LogTopic, u.LogTopic)
	if u.SinkType != "" {
		dst.Archive = connector.BuiltinPrefix + u.SinkType
	}
	if len(u.Inputs) > 0 || u.TopicsPattern != nil || len(u.InputSpecs) > 0 {
		dst.Inputs, dst.TopicsPattern, dst.InputSpecs = u.Inputs, u.TopicsPattern, u.InputSpecs
		dst.TopicToSchemaType, dst.TopicToSerdeClassName = u.TopicToSchemaType, u.TopicToSerdeClassName
	}
	if u.Configs != nil {
		dst.Configs = u.Configs
	}
	if u.Secrets != nil {
		dst.Secrets = u.Secrets
	}
	if u.Parallelism != 0 {
		dst.Parallelism = u.Parallelism
	}
	if u.Resources != nil {
		dst.Resources = u.Resources
	}
	if u.MaxMessageRetries != nil {
		dst.MaxMessageRetries = u.MaxMessageRetries
	}
	if u.CleanupSubscription != nil {
		dst.CleanupSubscription = u.CleanupSubscription
	}
	if u.TimeoutMs != nil {
		dst.TimeoutMs = u.TimeoutMs
	}
	if u.NegativeAckRedeliveryDelayMs != nil {
		dst.NegativeAckRedeliveryDelayMs = u.NegativeAckRedeliveryDelayMs
	}
	if u.RetainOrdering || u.RetainKeyOrdering {
		dst.RetainOrdering, dst.RetainKeyOrdering = u.RetainOrdering, u.RetainKeyOrdering
	}
}

func setStr(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

func (w *Worker) connectorGet(r *http.Request) (any, error) {
	m, _, err := w.meta.get(r.Context(), fqfnOf(r))
	if err != nil {
		return nil, err
	}
	if m.Source != nil {
		return m.Source, nil
	}
	return m.Sink, nil
}

func (w *Worker) connectorList(k connectorKind) func(*http.Request) (any, error) {
	return func(r *http.Request) (any, error) {
		metas, err := w.meta.list(r.Context(), r.PathValue("tenant")+"/"+r.PathValue("namespace"))
		if err != nil {
			return nil, err
		}
		names := []string{}
		for _, m := range metas {
			if m.ComponentType == k.component {
				names = append(names, m.Config.Name)
			}
		}
		return names, nil
	}
}

// SourceInstanceStatusData and SinkInstanceStatusData are Pulsar's; both are the worker's
// instance status renamed.
type SourceInstanceStatusData struct {
	Running                bool            `json:"running"`
	Error                  string          `json:"error"`
	NumRestarts            int64           `json:"numRestarts"`
	NumReceivedFromSource  int64           `json:"numReceivedFromSource"`
	NumSystemExceptions    int64           `json:"numSystemExceptions"`
	LatestSystemExceptions []ExceptionInfo `json:"latestSystemExceptions"`
	NumSourceExceptions    int64           `json:"numSourceExceptions"`
	LatestSourceExceptions []ExceptionInfo `json:"latestSourceExceptions"`
	NumWritten             int64           `json:"numWritten"`
	LastReceivedTime       int64           `json:"lastReceivedTime"`
	WorkerID               string          `json:"workerId"`
}

// SinkInstanceStatusData is one sink instance's status.
type SinkInstanceStatusData struct {
	Running                bool            `json:"running"`
	Error                  string          `json:"error"`
	NumRestarts            int64           `json:"numRestarts"`
	NumReadFromPulsar      int64           `json:"numReadFromPulsar"`
	NumSystemExceptions    int64           `json:"numSystemExceptions"`
	LatestSystemExceptions []ExceptionInfo `json:"latestSystemExceptions"`
	NumSinkExceptions      int64           `json:"numSinkExceptions"`
	LatestSinkExceptions   []ExceptionInfo `json:"latestSinkExceptions"`
	NumWrittenToSink       int64           `json:"numWrittenToSink"`
	LastReceivedTime       int64           `json:"lastReceivedTime"`
	WorkerID               string          `json:"workerId"`
}

// connectorInstance is one entry of SourceStatus/SinkStatus.instances.
type connectorInstance struct {
	InstanceID int `json:"instanceId"`
	Status     any `json:"status"`
}

// ConnectorStatus is Pulsar's SourceStatus / SinkStatus.
type ConnectorStatus struct {
	NumInstances int                 `json:"numInstances"`
	NumRunning   int                 `json:"numRunning"`
	Instances    []connectorInstance `json:"instances"`
}

func renameStatus(k connectorKind, s InstanceStatusData) any {
	if s.LatestSystemExceptions == nil {
		s.LatestSystemExceptions = []ExceptionInfo{}
	}
	if s.LatestUserExceptions == nil {
		s.LatestUserExceptions = []ExceptionInfo{}
	}
	if k.kind == connector.KindSource {
		return SourceInstanceStatusData{Running: s.Running, Error: s.Error, NumRestarts: s.NumRestarts,
			NumReceivedFromSource: s.NumReceived, NumSystemExceptions: s.NumSystemExceptions, LatestSystemExceptions: s.LatestSystemExceptions,
			NumSourceExceptions: s.NumUserExceptions, LatestSourceExceptions: s.LatestUserExceptions,
			NumWritten: s.NumSuccessfullyProcessed, LastReceivedTime: s.LastInvocationTime, WorkerID: s.WorkerID}
	}
	return SinkInstanceStatusData{Running: s.Running, Error: s.Error, NumRestarts: s.NumRestarts,
		NumReadFromPulsar: s.NumReceived, NumSystemExceptions: s.NumSystemExceptions, LatestSystemExceptions: s.LatestSystemExceptions,
		NumSinkExceptions: s.NumUserExceptions, LatestSinkExceptions: s.LatestUserExceptions,
		NumWrittenToSink: s.NumSuccessfullyProcessed, LastReceivedTime: s.LastInvocationTime, WorkerID: s.WorkerID}
}

// connectorStatus is the status of instance id (-1: all, as SourceStatus/SinkStatus).
func (w *Worker) connectorStatus(k connectorKind, id int) func(*http.Request) (any, error) {
	return func(r *http.Request) (any, error) {
		m, _, err := w.meta.get(r.Context(), fqfnOf(r))
		if err != nil {
			return nil, err
		}
		if id >= 0 {
			return renameStatus(k, w.oneStatus(r, m, id)), nil
		}
		out := ConnectorStatus{NumInstances: m.Config.Parallelism, Instances: []connectorInstance{}}
		for i := 0; i < m.Config.Parallelism; i++ {
			st := w.oneStatus(r, m, i)
			if st.Running {
				out.NumRunning++
			}
			out.Instances = append(out.Instances, connectorInstance{InstanceID: i, Status: renameStatus(k, st)})
		}
		return out, nil
	}
}

// ---- running connector instances

// offsets is an instance's checkpoint in the state store (deleted with the connector).
type offsets struct {
	w    *Worker
	fqfn string
	key  string
}

func (o offsets) Load(ctx context.Context) ([]byte, error) {
	v, err := o.w.state.get(ctx, o.fqfn, o.key)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return v.Bytes, err
}

func (o offsets) Save(ctx context.Context, b []byte) error {
	return o.w.state.put(ctx, o.fqfn, o.key, b)
}

// startConnector runs instance id of a source or sink in this process.
func (w *Worker) startConnector(m *FunctionMeta, id int) (RunningInstance, error) {
	spec := connector.Spec{
		Tenant: m.Config.Tenant, Namespace: m.Config.Namespace, Name: m.Config.Name,
		InstanceID: id, NumInstances: m.Config.Parallelism, ProcessingGuarantees: m.Config.ProcessingGuarantees,
		BrokerServiceURL: w.opts.BrokerServiceURL, AuthPlugin: w.opts.InstanceAuthPlugin, AuthParams: w.opts.InstanceAuthParams,
		TLSTrustCertsFilePath: w.opts.InstanceTLSTrustCertsFile,
		WorkerID:              w.info.WorkerID, Logger: w.log,
		Offsets: offsets{w: w, fqfn: m.Config.FQFN, key: "__connector_offsets__/" + strconv.Itoa(id)},
	}
	switch {
	case m.Source != nil:
		s := m.Source
		spec.Kind, spec.Archive, spec.Configs, spec.Secrets = connector.KindSource, s.Archive, s.Configs, s.Secrets
		spec.SourceTopic, spec.SourceSchemaType = s.TopicName, s.SchemaType
		if pc := s.ProducerConfig; pc != nil {
			spec.MaxPendingMessages, spec.CompressionType = pc.MaxPendingMessages, pc.CompressionType
		}
	case m.Sink != nil:
		s := m.Sink
		spec.Kind, spec.Archive, spec.Configs, spec.Secrets = connector.KindSink, s.Archive, s.Configs, s.Secrets
		spec.Inputs = s.inputList()
		if s.TopicsPattern != nil {
			spec.TopicsPattern = *s.TopicsPattern
		}
		spec.SubscriptionName, spec.SubscriptionPosition = s.SourceSubscriptionName, s.SourceSubscriptionPosition
		switch {
		case s.RetainOrdering:
			spec.SubscriptionType = connector.SubFailover
		case s.RetainKeyOrdering:
			spec.SubscriptionType = connector.SubKeyShared
		}
		if s.MaxMessageRetries != nil {
			spec.MaxMessageRetries = *s.MaxMessageRetries
		}
		spec.DeadLetterTopic = s.DeadLetterTopic
		if s.NegativeAckRedeliveryDelayMs != nil {
			spec.NegativeAckRedeliveryDelay = time.Duration(*s.NegativeAckRedeliveryDelayMs) * time.Millisecond
		}
		for _, in := range s.InputSpecs {
			if in.ReceiverQueueSize > 0 {
				spec.ReceiverQueueSize = in.ReceiverQueueSize
			}
		}
	default:
		return nil, fmt.Errorf("functions: %s %s has no connector configuration", m.ComponentType, m.Config.FQFN)
	}
	return connector.Start(w.connectors, spec)
}
