package functions

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/magnetar-io/magnetar/pkg/pf/pfpb"
)

// InstanceStatusData is one instance's status (pulsaradmin's FunctionInstanceStatusData).
type InstanceStatusData struct {
	Running                  bool            `json:"running"`
	Error                    string          `json:"error"`
	NumRestarts              int64           `json:"numRestarts"`
	NumReceived              int64           `json:"numReceived"`
	NumSuccessfullyProcessed int64           `json:"numSuccessfullyProcessed"`
	NumUserExceptions        int64           `json:"numUserExceptions"`
	LatestUserExceptions     []ExceptionInfo `json:"latestUserExceptions"`
	NumSystemExceptions      int64           `json:"numSystemExceptions"`
	LatestSystemExceptions   []ExceptionInfo `json:"latestSystemExceptions"`
	AverageLatency           float64         `json:"averageLatency"`
	LastInvocationTime       int64           `json:"lastInvocationTime"`
	WorkerID                 string          `json:"workerId"`
}

// ExceptionInfo is one recent exception.
type ExceptionInfo struct {
	ExceptionString string `json:"exceptionString"`
	TimestampMs     int64  `json:"timestampMs"`
}

// FunctionStatus is a function's status (pulsaradmin's FunctionStatus).
type FunctionStatus struct {
	NumInstances int              `json:"numInstances"`
	NumRunning   int              `json:"numRunning"`
	Instances    []InstanceStatus `json:"instances"`
}

// InstanceStatus is one entry of FunctionStatus.Instances.
type InstanceStatus struct {
	InstanceID int                `json:"instanceId"`
	Status     InstanceStatusData `json:"status"`
}

func exceptions(in []*pfpb.FunctionStatus_ExceptionInformation) []ExceptionInfo {
	out := []ExceptionInfo{}
	for _, e := range in {
		out = append(out, ExceptionInfo{ExceptionString: e.ExceptionString, TimestampMs: e.MsSinceEpoch})
	}
	return out
}

func fromProto(st *pfpb.FunctionStatus) InstanceStatusData {
	return InstanceStatusData{
		Running: st.Running, Error: st.FailureException, NumRestarts: st.NumRestarts, NumReceived: st.NumReceived,
		NumSuccessfullyProcessed: st.NumSuccessfullyProcessed, NumUserExceptions: st.NumUserExceptions,
		LatestUserExceptions: exceptions(st.LatestUserExceptions), NumSystemExceptions: st.NumSystemExceptions,
		LatestSystemExceptions: exceptions(st.LatestSystemExceptions), AverageLatency: st.AverageLatency,
		LastInvocationTime: st.LastInvocationTime, WorkerID: st.WorkerId,
	}
}

// askWorker fetches path from the worker that runs an instance.
func (w *Worker) askWorker(ctx context.Context, workerID, path string, out any) error {
	workers, err := listWorkers(ctx, w.store)
	if err != nil {
		return err
	}
	info, ok := workers[workerID]
	if !ok || info.URL == "" {
		return fmt.Errorf("worker %s is not registered", workerID)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, info.URL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set(localHeader, "1")
	resp, err := w.httpClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("worker %s: %s: %s", workerID, resp.Status, b)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out)
}

// oneStatus is instance id's status wherever it runs.
func (w *Worker) oneStatus(r *http.Request, m *FunctionMeta, id int) InstanceStatusData {
	ctx := r.Context()
	fqfn := m.Config.FQFN
	kv, err := w.store.Get(ctx, assignmentKey(fqfn, id))
	if err != nil {
		return InstanceStatusData{Error: "not assigned to a worker yet"}
	}
	var a Assignment
	_ = json.Unmarshal(kv.Value, &a)
	if a.Stopped {
		return InstanceStatusData{WorkerID: a.WorkerID, Error: "stopped"}
	}
	if a.WorkerID == w.info.WorkerID {
		s := w.local(fqfn, id)
		if s == nil {
			return InstanceStatusData{WorkerID: a.WorkerID, Error: "starting"}
		}
		return fromProto(s.status(ctx))
	}
	if r.Header.Get(localHeader) != "" {
		return InstanceStatusData{WorkerID: a.WorkerID, Error: "not running on this worker"}
	}
	var st InstanceStatusData
	if err := w.askWorker(ctx, a.WorkerID, "/admin/v3/functions/"+fqfn+"/"+strconv.Itoa(id)+"/status", &st); err != nil {
		return InstanceStatusData{WorkerID: a.WorkerID, Error: err.Error()}
	}
	return st
}

func (w *Worker) functionStatus(r *http.Request) (any, error) {
	m, _, err := w.meta.get(r.Context(), fqfnOf(r))
	if err != nil {
		return nil, err
	}
	fs := FunctionStatus{NumInstances: m.Config.Parallelism, Instances: []InstanceStatus{}}
	for i := 0; i < m.Config.Parallelism; i++ {
		st := w.oneStatus(r, m, i)
		if st.Running {
			fs.NumRunning++
		}
		fs.Instances = append(fs.Instances, InstanceStatus{InstanceID: i, Status: st})
	}
	return fs, nil
}

func (w *Worker) instanceStatus(r *http.Request, id int) (any, error) {
	m, _, err := w.meta.get(r.Context(), fqfnOf(r))
	if err != nil {
		return nil, err
	}
	return w.oneStatus(r, m, id), nil
}

// StatsBase and InstanceStatsData are pulsaradmin's FunctionInstanceStatsDataBase and
// FunctionInstanceStatsData.
type StatsBase struct {
	ReceivedTotal              int64   `json:"receivedTotal"`
	ProcessedSuccessfullyTotal int64   `json:"processedSuccessfullyTotal"`
	SystemExceptionsTotal      int64   `json:"systemExceptionsTotal"`
	UserExceptionsTotal        int64   `json:"userExceptionsTotal"`
	AvgProcessLatency          float64 `json:"avgProcessLatency"`
}

// InstanceStatsData is one instance's metrics.
type InstanceStatsData struct {
	StatsBase
	OneMin         StatsBase          `json:"oneMin"`
	LastInvocation int64              `json:"lastInvocation"`
	UserMetrics    map[string]float64 `json:"userMetrics"`
}

// InstanceStats is one entry of FunctionStats.Instances.
type InstanceStats struct {
	InstanceID int64             `json:"instanceId"`
	Metrics    InstanceStatsData `json:"metrics"`
}

// FunctionStats is a function's stats (pulsaradmin's FunctionStats).
type FunctionStats struct {
	StatsBase
	OneMin         StatsBase       `json:"oneMin"`
	LastInvocation int64           `json:"lastInvocation"`
	Instances      []InstanceStats `json:"instances"`
}

func statsFromProto(m *pfpb.MetricsData) InstanceStatsData {
	return InstanceStatsData{
		StatsBase: StatsBase{ReceivedTotal: m.ReceivedTotal, ProcessedSuccessfullyTotal: m.ProcessedSuccessfullyTotal,
			SystemExceptionsTotal: m.SystemExceptionsTotal, UserExceptionsTotal: m.UserExceptionsTotal, AvgProcessLatency: m.AvgProcessLatency},
		OneMin: StatsBase{ReceivedTotal: m.ReceivedTotal_1Min, ProcessedSuccessfullyTotal: m.ProcessedSuccessfullyTotal_1Min,
			SystemExceptionsTotal: m.SystemExceptionsTotal_1Min, UserExceptionsTotal: m.UserExceptionsTotal_1Min, AvgProcessLatency: m.AvgProcessLatency_1Min},
		LastInvocation: m.LastInvocation, UserMetrics: m.UserMetrics,
	}
}

func (w *Worker) oneStats(r *http.Request, fqfn string, id int) InstanceStatsData {
	ctx := r.Context()
	kv, err := w.store.Get(ctx, assignmentKey(fqfn, id))
	if err != nil {
		return InstanceStatsData{UserMetrics: map[string]float64{}}
	}
	var a Assignment
	_ = json.Unmarshal(kv.Value, &a)
	if a.WorkerID == w.info.WorkerID {
		if s := w.local(fqfn, id); s != nil {
			return statsFromProto(s.metrics(ctx, false))
		}
		return InstanceStatsData{UserMetrics: map[string]float64{}}
	}
	var st InstanceStatsData
	if r.Header.Get(localHeader) != "" || w.askWorker(ctx, a.WorkerID, "/admin/v3/functions/"+fqfn+"/"+strconv.Itoa(id)+"/stats", &st) != nil {
		return InstanceStatsData{UserMetrics: map[string]float64{}}
	}
	return st
}

func (w *Worker) functionStats(r *http.Request) (any, error) {
	m, _, err := w.meta.get(r.Context(), fqfnOf(r))
	if err != nil {
		return nil, err
	}
	fs := FunctionStats{Instances: []InstanceStats{}}
	var lat, latMin float64
	var n, nMin int
	for i := 0; i < m.Config.Parallelism; i++ {
		st := w.oneStats(r, m.Config.FQFN, i)
		fs.Instances = append(fs.Instances, InstanceStats{InstanceID: int64(i), Metrics: st})
		fs.ReceivedTotal += st.ReceivedTotal
		fs.ProcessedSuccessfullyTotal += st.ProcessedSuccessfullyTotal
		fs.SystemExceptionsTotal += st.SystemExceptionsTotal
		fs.UserExceptionsTotal += st.UserExceptionsTotal
		fs.OneMin.ReceivedTotal += st.OneMin.ReceivedTotal
		fs.OneMin.ProcessedSuccessfullyTotal += st.OneMin.ProcessedSuccessfullyTotal
		fs.OneMin.SystemExceptionsTotal += st.OneMin.SystemExceptionsTotal
		fs.OneMin.UserExceptionsTotal += st.OneMin.UserExceptionsTotal
		if st.AvgProcessLatency != 0 {
			lat += st.AvgProcessLatency
			n++
		}
		if st.OneMin.AvgProcessLatency != 0 {
			latMin += st.OneMin.AvgProcessLatency
			nMin++
		}
		fs.LastInvocation = max(fs.LastInvocation, st.LastInvocation)
	}
	if n > 0 {
		fs.AvgProcessLatency = lat / float64(n)
	}
	if nMin > 0 {
		fs.OneMin.AvgProcessLatency = latMin / float64(nMin)
	}
	return fs, nil
}

func (w *Worker) instanceStats(r *http.Request, id int) (any, error) {
	return w.oneStats(r, fqfnOf(r), id), nil
}

// ---- worker endpoints

func (w *Worker) cluster(r *http.Request) (any, error) {
	workers, err := listWorkers(r.Context(), w.store)
	if err != nil {
		return nil, err
	}
	out := []WorkerInfo{}
	for _, info := range workers {
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkerID < out[j].WorkerID })
	return out, nil
}

func (w *Worker) clusterLeader(r *http.Request) (any, error) {
	info, err := w.leaderInfo(r.Context())
	if err != nil {
		return nil, statusError(http.StatusServiceUnavailable, "no functions worker leader yet")
	}
	return info, nil
}

// assignments is Pulsar's /worker/assignments: worker id -> "tenant/ns/name:instance".
func (w *Worker) assignments(r *http.Request) (any, error) {
	all, err := listAssignments(r.Context(), w.store)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for key, a := range all {
		if fqfn, id, ok := parseAssignmentKey(key); ok {
			out[a.WorkerID] = append(out[a.WorkerID], fqfn+":"+strconv.Itoa(id))
		}
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out, nil
}

// functionsMetrics is /worker-stats/functionsmetrics: this worker's instances.
func (w *Worker) functionsMetrics(r *http.Request) (any, error) {
	type entry struct {
		Name    string            `json:"name"`
		Metrics InstanceStatsData `json:"metrics"`
	}
	w.mu.Lock()
	sups := make([]*supervisor, 0, len(w.instances))
	for _, s := range w.instances {
		sups = append(sups, s)
	}
	w.mu.Unlock()
	out := []entry{}
	for _, s := range sups {
		out = append(out, entry{Name: s.fqfn + ":" + strconv.Itoa(s.id), Metrics: statsFromProto(s.metrics(r.Context(), false))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ---- packages by path

func (w *Worker) upload(r *http.Request) (any, error) {
	u, err := w.readUpload(r, false)
	if err != nil {
		return nil, err
	}
	if !u.hasData {
		return nil, badField("data", "missing")
	}
	defer u.file.Close()
	path := r.FormValue("path")
	if path == "" {
		return nil, badField("path", "missing")
	}
	ref, err := w.pkgs.put(r.Context(), u.file, w.cfg.MaxPackageSizeMB<<20, u.fileName)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(ref)
	key := prefixPackages + url.PathEscape(path)
	if old, err := w.store.Get(r.Context(), key); err == nil {
		var oldRef PackageRef
		if json.Unmarshal(old.Value, &oldRef) == nil {
			defer func() { _ = w.pkgs.remove(context.Background(), oldRef) }()
		}
	}
	_, err = w.store.Put(r.Context(), key, b, -1)
	return nil, err
}

func (w *Worker) downloadPath(r *http.Request) (any, error) {
	path := r.URL.Query().Get("path")
	kv, err := w.store.Get(r.Context(), prefixPackages+url.PathEscape(path))
	if err != nil {
		return nil, fmt.Errorf("%w: package %q", ErrNotFound, path)
	}
	var ref PackageRef
	if err := json.Unmarshal(kv.Value, &ref); err != nil {
		return nil, err
	}
	return streamBody(func(ctx context.Context, out io.Writer) error { return w.pkgs.write(ctx, ref, out) }), nil
}

func (w *Worker) downloadFunction(r *http.Request) (any, error) {
	m, _, err := w.meta.get(r.Context(), fqfnOf(r))
	if err != nil {
		return nil, err
	}
	return streamBody(func(ctx context.Context, out io.Writer) error { return w.pkgs.write(ctx, m.Package, out) }), nil
}
