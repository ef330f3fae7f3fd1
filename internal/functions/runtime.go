package functions

import (
	"context"

	"github.com/magnetar-io/magnetar/pkg/pf"
	"github.com/magnetar-io/magnetar/pkg/pf/pfpb"
)

// InstanceSpec is everything a runtime needs to start one instance.
type InstanceSpec struct {
	Meta       *FunctionMeta
	InstanceID int
	// Package is the local file of the function's package (binary, .py/.whl/.zip, .wasm).
	Package string
	// Conf is the instance configuration (Pulsar's GoInstanceConfig); the runtime fills Port.
	Conf *pf.Conf
	// Dir is the worker's working directory (virtualenvs, logs).
	Dir string
}

// Runtime starts instances of one kind (process, wasm). Sources and sinks will be instances
// of a runtime too (componentType), see docs/design/functions.md.
type Runtime interface {
	Start(ctx context.Context, spec InstanceSpec) (RunningInstance, error)
}

// RunningInstance is one started instance.
type RunningInstance interface {
	Status(ctx context.Context) (*pfpb.FunctionStatus, error)
	Metrics(ctx context.Context, reset bool) (*pfpb.MetricsData, error)
	// Health fails when the instance does not answer or says it is unhealthy (hung).
	Health(ctx context.Context) error
	// Done is closed when the instance ended by itself; Err says why.
	Done() <-chan struct{}
	Err() error
	// MemoryBytes is its resident memory (0 when unknown).
	MemoryBytes() int64
	// Stop ends it (gracefully, then forcibly).
	Stop(ctx context.Context) error
}
