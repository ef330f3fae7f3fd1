package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// Metadata layout (all JSON; this package owns every key under /functions):
//
//	/functions/workers/<workerId>                       WorkerInfo, bound to the worker's session
//	/functions/leader/<session>                          the leader election (metadata.Session.Campaign)
//	/functions/meta/<tenant>/<ns>/<name>                 FunctionMeta
//	/functions/assignments/<tenant>/<ns>/<name>/<i>      Assignment of instance i (written by the leader)
//	/functions/state/<tenant>/<ns>/<name>/<key>          one state value: kind byte + value
//	/functions/packages/<path>                           PackageRef of an /upload by path
//
// Function metadata is written only by the leader (every admin write is forwarded to it),
// with CAS on the key's version, so two racing updates never both win.
const (
	prefixWorkers     = resources.FunctionsRoot + "workers/"
	electionLeader    = resources.FunctionsRoot + "leader"
	prefixMeta        = resources.FunctionsRoot + "meta/"
	prefixAssignments = resources.FunctionsRoot + "assignments/"
	prefixState       = resources.FunctionsRoot + "state/"
	prefixPackages    = resources.FunctionsRoot + "packages/"
)

// WorkerInfo is one worker's membership record (pulsaradmin's WorkerInfo plus its URL).
type WorkerInfo struct {
	WorkerID       string `json:"workerId"`
	WorkerHostname string `json:"workerHostname"`
	Port           int    `json:"port"`
	// URL is the worker's admin REST base, http://host:port.
	URL string `json:"url,omitempty"`
}

// PackageRef is where a package's bytes are: a list of ledgers, each holding it in entries
// of at most packageChunkBytes, in order.
type PackageRef struct {
	Ledgers  []int64 `json:"ledgers"`
	Size     int64   `json:"size"`
	SHA256   string  `json:"sha256"`
	FileName string  `json:"fileName,omitempty"`
	// URL records a package given by URL rather than uploaded (packageUrl).
	URL string `json:"url,omitempty"`
}

// Instance states (Pulsar's FunctionState).
const (
	StateRunning = "RUNNING"
	StateStopped = "STOPPED"
)

// FunctionMeta is one function's record (Pulsar's FunctionMetaData).
type FunctionMeta struct {
	Config        FunctionConfig `json:"config"`
	ComponentType ComponentType  `json:"componentType"`
	Package       PackageRef     `json:"package"`
	// Version grows with every update; instances restart when it changes.
	Version    uint64 `json:"version"`
	CreateTime int64  `json:"createTime"`
	// InstanceStates holds stopped instances by id ("-1": all of them).
	InstanceStates map[string]string `json:"instanceStates,omitempty"`
	// Restarts counts restart requests by instance id ("-1": all); a change restarts.
	Restarts map[string]int64 `json:"restarts,omitempty"`
	// Source and Sink are a connector's own configuration (component type SOURCE or
	// SINK); Config then holds only what the scheduler and the generic handlers read.
	Source *SourceConfig `json:"source,omitempty"`
	Sink   *SinkConfig   `json:"sink,omitempty"`
}

// stopped reports whether instance i is stopped.
func (m *FunctionMeta) stopped(i int) bool {
	if s, ok := m.InstanceStates[strconv.Itoa(i)]; ok {
		return s == StateStopped
	}
	return m.InstanceStates["-1"] == StateStopped
}

// restartEpoch is what an assignment carries so that a restart request changes it.
func (m *FunctionMeta) restartEpoch(i int) int64 {
	return m.Restarts["-1"] + m.Restarts[strconv.Itoa(i)]
}

// Assignment says which worker runs one instance and of which function version.
type Assignment struct {
	WorkerID string `json:"workerId"`
	Version  uint64 `json:"version"`
	Epoch    int64  `json:"epoch"`
	Stopped  bool   `json:"stopped,omitempty"`
}

func metaKey(fqfn string) string { return prefixMeta + fqfn }

func assignmentKey(fqfn string, i int) string {
	return prefixAssignments + fqfn + "/" + strconv.Itoa(i)
}

// parseAssignmentKey splits /functions/assignments/t/ns/name/i.
func parseAssignmentKey(key string) (fqfn string, i int, ok bool) {
	rest, found := strings.CutPrefix(key, prefixAssignments)
	if !found {
		return "", 0, false
	}
	j := strings.LastIndexByte(rest, '/')
	if j < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(rest[j+1:])
	if err != nil || strings.Count(rest[:j], "/") != 2 {
		return "", 0, false
	}
	return rest[:j], n, true
}

// ErrNotFound is a function, instance, state key or package that does not exist.
var ErrNotFound = errors.New("functions: not found")

// ErrExists is a create of a function that exists already.
var ErrExists = errors.New("functions: already exists")

// ErrConflict is a write that lost a race with another write; the client retries.
var ErrConflict = errors.New("functions: concurrent update")

// metaStore reads and writes function records.
type metaStore struct{ store metadata.Store }

func (s metaStore) get(ctx context.Context, fqfn string) (*FunctionMeta, metadata.Version, error) {
	kv, err := s.store.Get(ctx, metaKey(fqfn))
	if errors.Is(err, metadata.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: function %s", ErrNotFound, fqfn)
	}
	if err != nil {
		return nil, 0, err
	}
	m := &FunctionMeta{}
	if err := json.Unmarshal(kv.Value, m); err != nil {
		return nil, 0, fmt.Errorf("functions: record %s is corrupt: %w", kv.Key, err)
	}
	return m, kv.Version, nil
}

// put writes m if the key is still at version expected (metadata.NotExists: create).
func (s metaStore) put(ctx context.Context, m *FunctionMeta, expected metadata.Version) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = s.store.Put(ctx, metaKey(m.Config.FQFN), b, expected)
	switch {
	case errors.Is(err, metadata.ErrBadVersion) && expected == metadata.NotExists:
		return fmt.Errorf("%w: function %s", ErrExists, m.Config.FQFN)
	case errors.Is(err, metadata.ErrBadVersion):
		return fmt.Errorf("%w: function %s changed meanwhile", ErrConflict, m.Config.FQFN)
	}
	return err
}

func (s metaStore) delete(ctx context.Context, fqfn string, expected metadata.Version) error {
	err := s.store.Delete(ctx, metaKey(fqfn), expected)
	switch {
	case errors.Is(err, metadata.ErrNotFound):
		return fmt.Errorf("%w: function %s", ErrNotFound, fqfn)
	case errors.Is(err, metadata.ErrBadVersion):
		return fmt.Errorf("%w: function %s changed meanwhile", ErrConflict, fqfn)
	}
	return err
}

// list returns the functions of tenant/ns (both empty: every function).
func (s metaStore) list(ctx context.Context, tenantNS string) ([]*FunctionMeta, error) {
	prefix := prefixMeta
	if tenantNS != "" {
		prefix += tenantNS + "/"
	}
	kvs, err := s.store.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var out []*FunctionMeta
	for _, kv := range kvs {
		m := &FunctionMeta{}
		if err := json.Unmarshal(kv.Value, m); err != nil {
			continue // one corrupt record must not hide the others
		}
		out = append(out, m)
	}
	return out, nil
}

// assignments returns every assignment by key.
func listAssignments(ctx context.Context, store metadata.Store) (map[string]Assignment, error) {
	kvs, err := store.List(ctx, prefixAssignments)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Assignment, len(kvs))
	for _, kv := range kvs {
		var a Assignment
		if json.Unmarshal(kv.Value, &a) == nil {
			out[kv.Key] = a
		}
	}
	return out, nil
}

func listWorkers(ctx context.Context, store metadata.Store) (map[string]WorkerInfo, error) {
	kvs, err := store.List(ctx, prefixWorkers)
	if err != nil {
		return nil, err
	}
	out := make(map[string]WorkerInfo, len(kvs))
	for _, kv := range kvs {
		var w WorkerInfo
		if json.Unmarshal(kv.Value, &w) == nil && w.WorkerID != "" {
			out[w.WorkerID] = w
		}
	}
	return out, nil
}
