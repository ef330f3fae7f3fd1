package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/functions/wasm"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// localHeader marks a request one worker forwards to another for that worker's own
// instances, so it answers locally instead of fanning out again.
const localHeader = "X-Magnetar-Functions-Local"

// statePathPrefix is the instances' state service (stateStorageServiceUrl).
const statePathPrefix = "/admin/v3/functions-state"

// maxConfigBytes bounds the non-file parts of a multipart request.
const maxConfigBytes = 4 << 20

func (w *Worker) routes() http.Handler {
	mux := http.NewServeMux()
	// Pulsar serves the same API as v2 and v3; pulsaradmin uses its configured version.
	for _, base := range []string{"/admin/v3/functions", "/admin/v2/functions"} {
		fn := base + "/{tenant}/{namespace}/{name}"
		mux.HandleFunc("POST "+fn, w.write(w.create))
		mux.HandleFunc("PUT "+fn, w.write(w.update))
		mux.HandleFunc("DELETE "+fn, w.write(w.deleteFunction))
		mux.HandleFunc("GET "+fn, w.handle(w.getFunction))
		mux.HandleFunc("GET "+base+"/{tenant}/{namespace}", w.handle(w.listFunctions))
		mux.HandleFunc("GET "+fn+"/{what}", w.handle(w.getWhat))
		mux.HandleFunc("POST "+fn+"/{action}", w.handle(w.postAction))
		mux.HandleFunc("GET "+fn+"/{a}/{b...}", w.handle(w.getSub))
		mux.HandleFunc("POST "+fn+"/{a}/{b...}", w.handle(w.postSub))
		mux.HandleFunc("DELETE "+fn+"/state/{key...}", w.write(w.deleteState))
		mux.HandleFunc("POST "+base+"/upload", w.write(w.upload))
		mux.HandleFunc("GET "+base+"/download", w.handle(w.downloadPath))
		mux.HandleFunc("GET "+base+"/connectors", w.handle(w.allConnectors))
		mux.HandleFunc("GET "+base+"/builtins", w.handle(w.emptyList))
	}
	w.connectorRoutes(mux)

	mux.HandleFunc("GET /admin/v2/worker/cluster", w.handle(w.cluster))
	mux.HandleFunc("GET /admin/v2/worker/cluster/leader", w.handle(w.clusterLeader))
	mux.HandleFunc("GET /admin/v2/worker/assignments", w.handle(w.assignments))
	mux.HandleFunc("GET /admin/v2/worker/connectors", w.handle(w.allConnectors))
	mux.HandleFunc("GET /admin/v2/worker-stats/functionsmetrics", w.handle(w.functionsMetrics))
	mux.HandleFunc("GET /admin/v2/worker-stats/metrics", w.handle(w.emptyList))

	const st = statePathPrefix + "/{tenant}/{namespace}/{name}/{key...}"
	mux.HandleFunc("GET "+st, w.instanceState)
	mux.HandleFunc("PUT "+st, w.instanceState)
	mux.HandleFunc("DELETE "+st, w.instanceState)
	mux.HandleFunc("POST "+st, w.instanceState)
	return mux
}

// httpError is an error with its status.
type httpError struct {
	code int
	err  error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

func statusError(code int, format string, args ...any) error {
	return &httpError{code: code, err: fmt.Errorf(format, args...)}
}

// httpStatus is the one error -> HTTP status table of the functions API.
func httpStatus(err error) int {
	var he *httpError
	var fe *fieldError
	switch {
	case errors.As(err, &he):
		return he.code
	case errors.As(err, &fe), errors.Is(err, ErrExists), errors.Is(err, wasm.ErrBadModule):
		return http.StatusBadRequest
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrUnauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, errTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

func writeJSON(rw http.ResponseWriter, code int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	_ = json.NewEncoder(rw).Encode(v)
}

func writeError(rw http.ResponseWriter, err error) {
	writeJSON(rw, httpStatus(err), map[string]string{"reason": err.Error()})
}

// handle adapts a handler that returns a value (JSON 200; nil: 204) or an error.
func (w *Worker) handle(h func(*http.Request) (any, error)) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		if w.opts.Authorize != nil {
			if err := w.opts.Authorize(r, r.PathValue("tenant"), r.PathValue("namespace")); err != nil {
				writeError(rw, err)
				return
			}
		}
		v, err := h(r)
		if err != nil {
			if code := httpStatus(err); code >= 500 {
				w.log.Warn("functions API request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			}
			writeError(rw, err)
			return
		}
		switch v := v.(type) {
		case nil:
			rw.WriteHeader(http.StatusNoContent)
		case rawBody:
			rw.Header().Set("Content-Type", v.contentType)
			_, _ = rw.Write(v.b)
		case streamBody:
			rw.Header().Set("Content-Type", "application/octet-stream")
			if err := v(r.Context(), rw); err != nil {
				w.log.Warn("functions API download failed", "path", r.URL.Path, "err", err)
			}
		default:
			writeJSON(rw, http.StatusOK, v)
		}
	}
}

type rawBody struct {
	contentType string
	b           []byte
}

type streamBody func(ctx context.Context, w io.Writer) error

// write is handle for requests that change metadata: they run on the leader, so a
// non-leader forwards them there.
func (w *Worker) write(h func(*http.Request) (any, error)) http.HandlerFunc {
	inner := w.handle(h)
	return func(rw http.ResponseWriter, r *http.Request) {
		if w.opts.Authorize != nil {
			// Checked here too, so a request the leader would refuse is not forwarded.
			if err := w.opts.Authorize(r, r.PathValue("tenant"), r.PathValue("namespace")); err != nil {
				writeError(rw, err)
				return
			}
		}
		leader, ok := w.awaitLeader(r.Context())
		if ok && leader.WorkerID == w.info.WorkerID {
			inner(rw, r)
			return
		}
		if !ok {
			writeError(rw, statusError(http.StatusServiceUnavailable, "no functions worker leader yet; retry"))
			return
		}
		target, err := url.Parse(leader.URL)
		if err != nil {
			writeError(rw, err)
			return
		}
		proxy := httputil.NewSingleHostReverseProxy(target)
		proxy.ErrorHandler = func(rw http.ResponseWriter, _ *http.Request, err error) {
			writeError(rw, statusError(http.StatusServiceUnavailable, "forwarding to the leader %s: %v", leader.WorkerID, err))
		}
		proxy.ServeHTTP(rw, r)
	}
}

// leaderWait bounds how long a write waits for a leader to be elected. Right after a start
// (a standalone's single worker campaigns as it starts) the election is a moment away, and
// clients such as pulsar-admin do not retry a 503, so a write waits for it rather than fail.
const leaderWait = 10 * time.Second

// awaitLeader returns the leader, waiting up to leaderWait (or the request's end) for one.
// A leader key naming this worker counts only once this worker knows it leads.
func (w *Worker) awaitLeader(ctx context.Context) (WorkerInfo, bool) {
	deadline := time.Now().Add(leaderWait)
	for {
		if w.IsLeader() {
			return w.info, true
		}
		if leader, err := w.leaderInfo(ctx); err == nil && leader.URL != "" && leader.WorkerID != w.info.WorkerID {
			return leader, true
		}
		if time.Now().After(deadline) {
			return WorkerInfo{}, false
		}
		select {
		case <-ctx.Done():
			return WorkerInfo{}, false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (w *Worker) leaderInfo(ctx context.Context) (WorkerInfo, error) {
	kv, err := metadata.Leader(ctx, w.store, electionLeader)
	if err != nil {
		return WorkerInfo{}, err
	}
	var info WorkerInfo
	return info, json.Unmarshal(kv.Value, &info)
}

func fqfnOf(r *http.Request) string {
	return r.PathValue("tenant") + "/" + r.PathValue("namespace") + "/" + r.PathValue("name")
}

// ---- create / update / delete / get / list

// upload is a function package arriving with a create or update.
type upload struct {
	cfg      *FunctionConfig
	file     multipart.File
	fileName string
	pkgURL   string
	hasData  bool
}

func (w *Worker) readUpload(r *http.Request, needConfig bool) (*upload, error) {
	limit := w.cfg.MaxPackageSizeMB<<20 + maxConfigBytes
	r.Body = http.MaxBytesReader(nil, r.Body, limit)
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, fmt.Errorf("%w: request larger than functionsMaxPackageSizeMB", errTooLarge)
		}
		return nil, badField("body", "want multipart/form-data with functionConfig and data or url: %v", err)
	}
	u := &upload{}
	if v := r.MultipartForm.Value["functionConfig"]; len(v) > 0 {
		cfg, err := decodeConfig([]byte(v[0]))
		if err != nil {
			return nil, err
		}
		u.cfg = cfg
	} else if fh := r.MultipartForm.File["functionConfig"]; len(fh) > 0 {
		b, err := readPart(fh[0])
		if err != nil {
			return nil, err
		}
		if u.cfg, err = decodeConfig(b); err != nil {
			return nil, err
		}
	} else if needConfig {
		return nil, badField("functionConfig", "missing")
	}
	if v := r.MultipartForm.Value["url"]; len(v) > 0 {
		u.pkgURL = strings.TrimSpace(v[0])
	}
	if fh := r.MultipartForm.File["data"]; len(fh) > 0 {
		f, err := fh[0].Open()
		if err != nil {
			return nil, err
		}
		u.file, u.fileName, u.hasData = f, filepath.Base(fh[0].Filename), true
	}
	return u, nil
}

func readPart(fh *multipart.FileHeader) ([]byte, error) {
	f, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxConfigBytes))
}

func (w *Worker) limits() limits { return limits{maxParallelism: w.cfg.MaxParallelism} }

func (w *Worker) checkNamespace(ctx context.Context, tenant, ns string) error {
	if w.opts.Resources == nil {
		return nil
	}
	if _, err := w.opts.Resources.Tenant(ctx, tenant); err != nil {
		return badField("tenant", "tenant %s does not exist", tenant)
	}
	if _, err := w.opts.Resources.Namespace(ctx, tenant, ns); err != nil {
		return badField("namespace", "namespace %s/%s does not exist", tenant, ns)
	}
	return nil
}

func (w *Worker) create(r *http.Request) (any, error) {
	ctx := r.Context()
	u, err := w.readUpload(r, true)
	if err != nil {
		return nil, err
	}
	if u.file != nil {
		defer u.file.Close()
	}
	cfg := u.cfg
	if err := cfg.normalize(r.PathValue("tenant"), r.PathValue("namespace"), r.PathValue("name"), w.limits()); err != nil {
		return nil, err
	}
	if err := w.checkNamespace(ctx, cfg.Tenant, cfg.Namespace); err != nil {
		return nil, err
	}
	if _, _, err := w.meta.get(ctx, cfg.FQFN); err == nil {
		return nil, fmt.Errorf("%w: function %s", ErrExists, cfg.FQFN)
	}
	if !u.hasData && u.pkgURL == "" {
		return nil, badField("data", "a function needs its package: a data file or a url")
	}
	ref, err := w.storePackage(ctx, cfg, u)
	if err != nil {
		return nil, err
	}
	m := &FunctionMeta{Config: *cfg, ComponentType: ComponentFunction, Package: ref, Version: 1, CreateTime: time.Now().UnixMilli()}
	if err := w.meta.put(ctx, m, metadata.NotExists); err != nil {
		_ = w.pkgs.remove(context.Background(), ref)
		return nil, err
	}
	w.log.Info("function created", "function", cfg.FQFN, "runtime", cfg.Runtime, "parallelism", cfg.Parallelism)
	return nil, nil
}

// storePackage validates the package for the runtime and stores it.
func (w *Worker) storePackage(ctx context.Context, cfg *FunctionConfig, u *upload) (PackageRef, error) {
	var rd io.Reader
	name := u.fileName
	switch {
	case u.hasData:
		rd = u.file
	default:
		body, fname, err := w.fetchURL(ctx, u.pkgURL)
		if err != nil {
			return PackageRef{}, err
		}
		defer body.Close()
		rd, name = body, fname
	}
	if cfg.Runtime == "" {
		switch strings.ToLower(filepath.Ext(name)) {
		case ".py", ".whl", ".zip":
			cfg.Runtime = RuntimePython
		case ".wasm":
			cfg.Runtime = RuntimeWasm
		default:
			cfg.Runtime = RuntimeGo
		}
		if err := cfg.normalizeRuntime(); err != nil {
			return PackageRef{}, err
		}
	}
	// Peek at the head to refuse a package the runtime cannot run, with a 400 now rather
	// than an instance that never starts.
	head := make([]byte, 8)
	n, _ := io.ReadFull(rd, head)
	head = head[:n]
	switch cfg.Runtime {
	case RuntimeGo:
		if !bytes.HasPrefix(head, []byte("\x7fELF")) {
			return PackageRef{}, badField("go", "the package is not a Linux executable (build the function with GOOS=linux)")
		}
	case RuntimeWasm:
		if !bytes.HasPrefix(head, []byte("\x00asm")) {
			return PackageRef{}, badField("wasm", "the package is not a WebAssembly module")
		}
	case RuntimePython:
		ext := strings.ToLower(filepath.Ext(name))
		if ext != ".py" && ext != ".whl" && ext != ".zip" {
			return PackageRef{}, badField("py", "the package %q is not a .py file, a wheel or a zip", name)
		}
	}
	limit := w.cfg.MaxPackageSizeMB << 20
	if cfg.Runtime == RuntimeWasm {
		// Compile it once now: a module that does not validate is a 400, not a crash loop.
		code, err := io.ReadAll(io.LimitReader(io.MultiReader(bytes.NewReader(head), rd), limit+1))
		if err != nil {
			return PackageRef{}, err
		}
		if int64(len(code)) > limit {
			return PackageRef{}, fmt.Errorf("%w: package larger than functionsMaxPackageSizeMB", errTooLarge)
		}
		if err := wasm.Validate(ctx, code); err != nil {
			return PackageRef{}, badField("wasm", "%v", err)
		}
		rd, head = bytes.NewReader(code), nil
	}
	ref, err := w.pkgs.put(ctx, io.MultiReader(bytes.NewReader(head), rd), limit, name)
	if err != nil {
		return PackageRef{}, err
	}
	if !u.hasData {
		ref.URL = u.pkgURL
	}
	return ref, nil
}

// fetchURL opens a package given by URL: http(s)://, file:// (a path on the worker), or
// function:// (the packages API's, packages.go:packageURL).
func (w *Worker) fetchURL(ctx context.Context, raw string) (io.ReadCloser, string, error) {
	if resources.IsPackageURL(raw) {
		return w.packageURL(ctx, raw)
	}
	pu, err := url.Parse(raw)
	if err != nil {
		return nil, "", badField("url", "%q: %v", raw, err)
	}
	switch pu.Scheme {
	case "http", "https":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
		if err != nil {
			return nil, "", badField("url", "%v", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, "", badField("url", "fetching %s: %v", raw, err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, "", badField("url", "fetching %s: %s", raw, resp.Status)
		}
		return resp.Body, filepath.Base(pu.Path), nil
	case "file":
		f, err := os.Open(pu.Path)
		if err != nil {
			return nil, "", badField("url", "%v", err)
		}
		return f, filepath.Base(pu.Path), nil
	}
	return nil, "", badField("url", "%q: want function://, http://, https:// or file://", raw)
}

func (w *Worker) update(r *http.Request) (any, error) {
	ctx := r.Context()
	fqfn := fqfnOf(r)
	old, ver, err := w.meta.get(ctx, fqfn)
	if err != nil {
		return nil, err
	}
	u, err := w.readUpload(r, false)
	if err != nil {
		return nil, err
	}
	if u.file != nil {
		defer u.file.Close()
	}
	cfg := old.Config
	if u.cfg != nil {
		cfg = *u.cfg
		if cfg.Runtime == "" && cfg.Py == nil && cfg.Go == nil && cfg.Wasm == nil {
			cfg.Runtime = old.Config.Runtime
		}
		// Unset inputs keep the old ones (pulsar-admin's update sends only what changed).
		if len(cfg.Inputs) == 0 && cfg.TopicsPattern == nil && len(cfg.InputSpecs) == 0 {
			cfg.Inputs, cfg.TopicsPattern, cfg.InputSpecs = old.Config.Inputs, old.Config.TopicsPattern, old.Config.InputSpecs
		}
		if cfg.Output == "" {
			cfg.Output = old.Config.Output
		}
		if cfg.ClassName == "" {
			cfg.ClassName = old.Config.ClassName
		}
		if cfg.CleanupSubscription == nil {
			cfg.CleanupSubscription = old.Config.CleanupSubscription
		}
	}
	if err := cfg.normalize(r.PathValue("tenant"), r.PathValue("namespace"), r.PathValue("name"), w.limits()); err != nil {
		return nil, err
	}
	if cfg.Runtime != old.Config.Runtime {
		return nil, badField("runtime", "cannot change from %s to %s: delete and create the function", old.Config.Runtime, cfg.Runtime)
	}
	m := *old
	m.Config = cfg
	m.Version = old.Version + 1
	var newRef *PackageRef
	if u.hasData || u.pkgURL != "" {
		ref, err := w.storePackage(ctx, &m.Config, u)
		if err != nil {
			return nil, err
		}
		m.Package, newRef = ref, &ref
	}
	if err := w.meta.put(ctx, &m, ver); err != nil {
		if newRef != nil {
			_ = w.pkgs.remove(context.Background(), *newRef)
		}
		return nil, err
	}
	if newRef != nil {
		_ = w.pkgs.remove(context.Background(), old.Package)
	}
	w.log.Info("function updated", "function", fqfn, "version", m.Version)
	return nil, nil
}

func (w *Worker) deleteFunction(r *http.Request) (any, error) {
	ctx := r.Context()
	fqfn := fqfnOf(r)
	m, ver, err := w.meta.get(ctx, fqfn)
	if err != nil {
		return nil, err
	}
	if err := w.meta.delete(ctx, fqfn, ver); err != nil {
		return nil, err
	}
	if err := w.state.deleteAll(ctx, fqfn); err != nil {
		w.log.Warn("deleting function state", "function", fqfn, "err", err)
	}
	if err := w.pkgs.remove(ctx, m.Package); err != nil {
		w.log.Warn("deleting function package", "function", fqfn, "err", err)
	}
	w.cleanupSubscriptions(m) // cleanup.go
	w.log.Info("function deleted", "function", fqfn)
	return nil, nil
}

func (w *Worker) getFunction(r *http.Request) (any, error) {
	m, _, err := w.meta.get(r.Context(), fqfnOf(r))
	if err != nil {
		return nil, err
	}
	if m.ComponentType != ComponentFunction && m.ComponentType != "" {
		return nil, fmt.Errorf("%w: function %s (it is a %s)", ErrNotFound, m.Config.FQFN, strings.ToLower(string(m.ComponentType)))
	}
	return m.Config, nil
}

func (w *Worker) listFunctions(r *http.Request) (any, error) {
	metas, err := w.meta.list(r.Context(), r.PathValue("tenant")+"/"+r.PathValue("namespace"))
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, m := range metas {
		if m.ComponentType == ComponentFunction || m.ComponentType == "" {
			names = append(names, m.Config.Name)
		}
	}
	return names, nil
}

func (w *Worker) emptyList(*http.Request) (any, error) { return []string{}, nil }

// ---- sub-resources

func (w *Worker) getWhat(r *http.Request) (any, error) {
	switch r.PathValue("what") {
	case "status":
		return w.functionStatus(r)
	case "stats":
		return w.functionStats(r)
	case "download":
		return w.downloadFunction(r)
	}
	return nil, statusError(http.StatusNotFound, "no such resource %q", r.PathValue("what"))
}

func (w *Worker) postAction(r *http.Request) (any, error) {
	switch a := r.PathValue("action"); a {
	case "start", "stop", "restart":
		return w.forwardWrite(r, func(r *http.Request) (any, error) { return w.instanceAction(r, a, -1) })
	case "trigger":
		return w.trigger(r)
	}
	return nil, statusError(http.StatusNotFound, "no such action %q", r.PathValue("action"))
}

func (w *Worker) getSub(r *http.Request) (any, error) {
	a, b := r.PathValue("a"), r.PathValue("b")
	if a == "state" {
		return w.getState(r, b)
	}
	id, err := w.instanceID(r, a)
	if err != nil {
		return nil, err
	}
	switch b {
	case "status":
		return w.instanceStatus(r, id)
	case "stats":
		return w.instanceStats(r, id)
	}
	return nil, statusError(http.StatusNotFound, "no such resource %q", b)
}

func (w *Worker) postSub(r *http.Request) (any, error) {
	a, b := r.PathValue("a"), r.PathValue("b")
	if a == "state" {
		return w.forwardWrite(r, func(r *http.Request) (any, error) { return w.putState(r, b) })
	}
	id, err := w.instanceID(r, a)
	if err != nil {
		return nil, err
	}
	switch b {
	case "start", "stop", "restart":
		return w.forwardWrite(r, func(r *http.Request) (any, error) { return w.instanceAction(r, b, id) })
	}
	return nil, statusError(http.StatusNotFound, "no such action %q", b)
}

// forwardWrite runs a write on the leader (here, or forwarded).
func (w *Worker) forwardWrite(r *http.Request, h func(*http.Request) (any, error)) (any, error) {
	if w.IsLeader() {
		return h(r)
	}
	rec := &recorder{header: http.Header{}}
	w.write(h)(rec, r)
	if rec.code >= 300 {
		var body struct{ Reason string }
		_ = json.Unmarshal(rec.body.Bytes(), &body)
		return nil, statusError(rec.code, "%s", body.Reason)
	}
	if rec.body.Len() == 0 {
		return nil, nil
	}
	return rawBody{contentType: rec.header.Get("Content-Type"), b: rec.body.Bytes()}, nil
}

type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(code int) { r.code = code }

func (w *Worker) instanceID(r *http.Request, s string) (int, error) {
	id, err := strconv.Atoi(s)
	if err != nil || id < 0 {
		return 0, badField("instanceId", "%q is not an instance id", s)
	}
	m, _, err := w.meta.get(r.Context(), fqfnOf(r))
	if err != nil {
		return 0, err
	}
	if id >= m.Config.Parallelism {
		return 0, fmt.Errorf("%w: instance %d of %s (parallelism %d)", ErrNotFound, id, m.Config.FQFN, m.Config.Parallelism)
	}
	return id, nil
}

// instanceAction starts, stops or restarts instance id (-1: all) by recording it in the
// function's record; the leader's next schedule changes the assignments accordingly.
func (w *Worker) instanceAction(r *http.Request, action string, id int) (any, error) {
	ctx := r.Context()
	fqfn := fqfnOf(r)
	for attempt := 0; attempt < 10; attempt++ {
		m, ver, err := w.meta.get(ctx, fqfn)
		if err != nil {
			return nil, err
		}
		key := strconv.Itoa(id)
		switch action {
		case "restart":
			if m.Restarts == nil {
				m.Restarts = map[string]int64{}
			}
			m.Restarts[key]++
		case "start", "stop":
			state := StateRunning
			if action == "stop" {
				state = StateStopped
			}
			if m.InstanceStates == nil {
				m.InstanceStates = map[string]string{}
			}
			if id == -1 {
				clear(m.InstanceStates)
			}
			m.InstanceStates[key] = state
		}
		err = w.meta.put(ctx, m, ver)
		if !errors.Is(err, ErrConflict) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: function %s keeps changing", ErrConflict, fqfn)
}
