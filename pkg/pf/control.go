package pf

import (
	"context"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/magnetar-io/magnetar/pkg/pf/pfpb"
)

// ControlServer serves InstanceControl for inst.
func ControlServer(inst *Instance) pfpb.InstanceControlServer { return control{inst} }

type control struct{ inst *Instance }

func (c control) GetFunctionStatus(context.Context, *emptypb.Empty) (*pfpb.FunctionStatus, error) {
	return c.inst.Status(), nil
}

func (c control) GetAndResetMetrics(context.Context, *emptypb.Empty) (*pfpb.MetricsData, error) {
	return c.inst.Metrics(true), nil
}

func (c control) ResetMetrics(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	c.inst.Metrics(true)
	return &emptypb.Empty{}, nil
}

func (c control) GetMetrics(context.Context, *emptypb.Empty) (*pfpb.MetricsData, error) {
	return c.inst.Metrics(false), nil
}

func (c control) HealthCheck(context.Context, *emptypb.Empty) (*pfpb.HealthCheckResult, error) {
	return &pfpb.HealthCheckResult{Success: c.inst.Healthy()}, nil
}
