package pfpb

// The InstanceControl service by hand instead of protoc-gen-go-grpc: five unary methods,
// and one generator fewer to pin. Method names are the proto's (/proto.InstanceControl/...),
// which is what a Pulsar worker dials.

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

// ServiceName is the fully qualified gRPC service name.
const ServiceName = "proto.InstanceControl"

// InstanceControlServer is what an instance serves.
type InstanceControlServer interface {
	GetFunctionStatus(context.Context, *emptypb.Empty) (*FunctionStatus, error)
	GetAndResetMetrics(context.Context, *emptypb.Empty) (*MetricsData, error)
	ResetMetrics(context.Context, *emptypb.Empty) (*emptypb.Empty, error)
	GetMetrics(context.Context, *emptypb.Empty) (*MetricsData, error)
	HealthCheck(context.Context, *emptypb.Empty) (*HealthCheckResult, error)
}

// RegisterInstanceControlServer registers srv on s.
func RegisterInstanceControlServer(s grpc.ServiceRegistrar, srv InstanceControlServer) {
	s.RegisterService(&serviceDesc, srv)
}

func unary[Resp any](call func(InstanceControlServer, context.Context, *emptypb.Empty) (Resp, error), name string) grpc.MethodDesc {
	return grpc.MethodDesc{
		MethodName: name,
		Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(emptypb.Empty)
			if err := dec(in); err != nil {
				return nil, err
			}
			s := srv.(InstanceControlServer)
			if icpt == nil {
				return call(s, ctx, in)
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + ServiceName + "/" + name}
			return icpt(ctx, in, info, func(ctx context.Context, req any) (any, error) {
				return call(s, ctx, req.(*emptypb.Empty))
			})
		},
	}
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: ServiceName,
	HandlerType: (*InstanceControlServer)(nil),
	Methods: []grpc.MethodDesc{
		unary(InstanceControlServer.GetFunctionStatus, "GetFunctionStatus"),
		unary(InstanceControlServer.GetAndResetMetrics, "GetAndResetMetrics"),
		unary(InstanceControlServer.ResetMetrics, "ResetMetrics"),
		unary(InstanceControlServer.GetMetrics, "GetMetrics"),
		unary(InstanceControlServer.HealthCheck, "HealthCheck"),
	},
	Metadata: "instance.proto",
}

// InstanceControlClient is the worker's side.
type InstanceControlClient struct{ cc grpc.ClientConnInterface }

// NewInstanceControlClient returns a client over cc.
func NewInstanceControlClient(cc grpc.ClientConnInterface) *InstanceControlClient {
	return &InstanceControlClient{cc: cc}
}

func invoke[Resp any](ctx context.Context, cc grpc.ClientConnInterface, name string, opts []grpc.CallOption) (*Resp, error) {
	out := new(Resp)
	if err := cc.Invoke(ctx, "/"+ServiceName+"/"+name, &emptypb.Empty{}, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// GetFunctionStatus asks the instance for its status.
func (c *InstanceControlClient) GetFunctionStatus(ctx context.Context, opts ...grpc.CallOption) (*FunctionStatus, error) {
	return invoke[FunctionStatus](ctx, c.cc, "GetFunctionStatus", opts)
}

// GetAndResetMetrics returns the metrics and resets them.
func (c *InstanceControlClient) GetAndResetMetrics(ctx context.Context, opts ...grpc.CallOption) (*MetricsData, error) {
	return invoke[MetricsData](ctx, c.cc, "GetAndResetMetrics", opts)
}

// ResetMetrics resets the metrics.
func (c *InstanceControlClient) ResetMetrics(ctx context.Context, opts ...grpc.CallOption) error {
	_, err := invoke[emptypb.Empty](ctx, c.cc, "ResetMetrics", opts)
	return err
}

// GetMetrics returns the metrics.
func (c *InstanceControlClient) GetMetrics(ctx context.Context, opts ...grpc.CallOption) (*MetricsData, error) {
	return invoke[MetricsData](ctx, c.cc, "GetMetrics", opts)
}

// HealthCheck asks whether the instance is healthy.
func (c *InstanceControlClient) HealthCheck(ctx context.Context, opts ...grpc.CallOption) (*HealthCheckResult, error) {
	return invoke[HealthCheckResult](ctx, c.cc, "HealthCheck", opts)
}
