package pf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/grpc"

	"github.com/magnetar-io/magnetar/pkg/pf/pfpb"
)

// Record is one input message as the handler sees it.
type Record struct {
	Topic       string
	Key         string
	Properties  map[string]string
	EventTime   time.Time
	PublishTime time.Time
	Payload     []byte
	// MessageID is the input message's id ("ledger:entry:partition:batch").
	MessageID string

	msg      pulsar.Message
	consumer pulsar.Consumer
}

// Function processes one record; a nil result publishes nothing.
type Function interface {
	Process(ctx context.Context, rec *Record) ([]byte, error)
}

// Window is what a windowed function gets: the records of one window, oldest first.
type Window struct {
	Start, End time.Time
	Records    []*Record
}

// WindowFunction processes one window; a nil result publishes nothing.
type WindowFunction interface {
	ProcessWindow(ctx context.Context, w *Window) ([]byte, error)
}

// FunctionFunc adapts a plain function to Function.
type FunctionFunc func(ctx context.Context, in []byte) ([]byte, error)

// Process calls f with the payload.
func (f FunctionFunc) Process(ctx context.Context, rec *Record) ([]byte, error) {
	return f(ctx, rec.Payload)
}

// WindowFunc adapts a plain function to WindowFunction.
type WindowFunc func(ctx context.Context, w *Window) ([]byte, error)

// ProcessWindow calls f.
func (f WindowFunc) ProcessWindow(ctx context.Context, w *Window) ([]byte, error) { return f(ctx, w) }

// asFunction accepts the handler shapes Start takes.
func asFunction(handler any) (any, error) {
	switch h := handler.(type) {
	case Function, WindowFunction:
		return h, nil
	case func(context.Context, []byte) ([]byte, error):
		return FunctionFunc(h), nil
	case func(context.Context, []byte) error:
		return FunctionFunc(func(ctx context.Context, in []byte) ([]byte, error) { return nil, h(ctx, in) }), nil
	case func([]byte) ([]byte, error):
		return FunctionFunc(func(_ context.Context, in []byte) ([]byte, error) { return h(in) }), nil
	case func([]byte) []byte:
		return FunctionFunc(func(_ context.Context, in []byte) ([]byte, error) { return h(in), nil }), nil
	case func(context.Context, *Record) ([]byte, error):
		return functionOf(h), nil
	case func(context.Context, *Window) ([]byte, error):
		return WindowFunc(h), nil
	}
	return nil, fmt.Errorf("pf: unsupported handler type %T (want func(context.Context, []byte) ([]byte, error), a Function or a WindowFunction)", handler)
}

type functionOf func(context.Context, *Record) ([]byte, error)

func (f functionOf) Process(ctx context.Context, rec *Record) ([]byte, error) { return f(ctx, rec) }

// Start runs handler as a function instance with the configuration from the command line
// (-instance-conf) until SIGTERM or SIGINT, serving InstanceControl on the conf's port.
// It exits the process: 0 after a clean stop, 1 on failure (the worker restarts it).
func Start(handler any) {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(handler, os.Args[1:], logger); err != nil {
		logger.Error("function instance failed", "err", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// StartWindow is Start for a windowed handler.
func StartWindow(handler func(ctx context.Context, w *Window) ([]byte, error)) {
	Start(WindowFunc(handler))
}

func run(handler any, args []string, logger *slog.Logger) error {
	fn, err := asFunction(handler)
	if err != nil {
		return err
	}
	conf, err := ParseConf(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	inst, err := NewInstance(conf, fn, Options{Logger: logger})
	if err != nil {
		return err
	}
	if conf.Port > 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(conf.Port)))
		if err != nil {
			return fmt.Errorf("pf: InstanceControl listen on port %d: %w", conf.Port, err)
		}
		srv := grpc.NewServer()
		pfpb.RegisterInstanceControlServer(srv, ControlServer(inst))
		go func() { _ = srv.Serve(ln) }()
		defer srv.Stop()
	}
	err = inst.Run(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
