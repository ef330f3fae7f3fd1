package pf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-io/magnetar/pkg/pf/pfpb"
	"github.com/magnetar-io/magnetar/pkg/pf/pfstats"
)

// Options tune an Instance beyond its Conf.
type Options struct {
	// Logger receives the instance's own log (nil: discard).
	Logger *slog.Logger
	// TimestampExtractor gives a record's event time in a windowed function (default: the
	// message's event time, else its publish time).
	TimestampExtractor func(*Record) time.Time
	// HangTimeout makes HealthCheck fail while one invocation runs longer (0: 2 x timeoutMs
	// + 10 s when timeoutMs is set, otherwise never).
	HangTimeout time.Duration
}

// nackRedeliveryDelay is how soon a failed record comes back.
const nackRedeliveryDelay = time.Second

// Instance is one running function instance: its consumers, producers, processing loop and
// counters. The Go SDK runs one per process; the worker's WASM runtime runs many in process.
type Instance struct {
	conf     *Conf
	fn       Function
	wfn      WindowFunction
	window   *WindowConfig
	user     map[string]any
	opts     Options
	log      *slog.Logger
	userLog  *slog.Logger
	state    *stateClient
	stats    pfstats.Stats
	running  atomic.Bool
	invoking atomic.Int64 // unix nanos the current invocation began, 0 when idle

	client   pulsar.Client
	out      pulsar.Producer            // the output producer (not under EFFECTIVELY_ONCE)
	eoOut    map[string]pulsar.Producer // EFFECTIVELY_ONCE: one per input partition topic
	extraMu  sync.Mutex
	extra    map[string]pulsar.Producer // Publish targets
	logProd  pulsar.Producer
	lateProd pulsar.Producer
	fatal    chan error
}

// NewInstance prepares an instance of fn (a Function or WindowFunction, or one of the
// handler shapes Start accepts) for conf; Run starts it.
func NewInstance(conf *Conf, fn any, opts Options) (*Instance, error) {
	if err := conf.Validate(); err != nil {
		return nil, err
	}
	f, err := asFunction(fn)
	if err != nil {
		return nil, err
	}
	user, wc, err := conf.userConfigMap()
	if err != nil {
		return nil, err
	}
	in := &Instance{conf: conf, user: user, window: wc, opts: opts, state: newStateClient(conf), fatal: make(chan error, 1)}
	in.log = opts.Logger
	if in.log == nil {
		in.log = slog.New(slog.DiscardHandler)
	}
	in.log = in.log.With("function", conf.FQFN(), "instance", conf.InstanceID)
	switch f := f.(type) {
	case WindowFunction:
		in.wfn = f
		if wc == nil {
			return nil, errors.New("pf: a window function needs a windowConfig")
		}
		if conf.ProcessingGuarantees == EffectivelyOnce {
			return nil, errors.New("pf: windowed functions do not support EFFECTIVELY_ONCE")
		}
	case Function:
		in.fn = f
	}
	in.userLog = in.log
	return in, nil
}

// Status is the instance's status as InstanceControl reports it.
func (in *Instance) Status() *pfpb.FunctionStatus {
	return in.stats.Status(in.running.Load(), in.conf.InstanceID, in.conf.WorkerID)
}

// Metrics returns the counters, resetting the windowed ones when reset is set.
func (in *Instance) Metrics(reset bool) *pfpb.MetricsData { return in.stats.Metrics(reset) }

// Healthy is false while one invocation has run past the hang timeout.
func (in *Instance) Healthy() bool {
	hang := in.opts.HangTimeout
	if hang == 0 && in.conf.TimeoutMs > 0 {
		hang = 2*time.Duration(in.conf.TimeoutMs)*time.Millisecond + 10*time.Second
	}
	began := in.invoking.Load()
	return hang <= 0 || began == 0 || time.Since(time.Unix(0, began)) < hang
}

func (in *Instance) recordUserMetric(name string, v float64) { in.stats.SetUserMetric(name, v) }

// Run consumes, processes and produces until ctx is done (nil) or a failure the instance
// cannot recover from (the error; the worker restarts it).
func (in *Instance) Run(ctx context.Context) (err error) {
	in.running.Store(true)
	defer func() {
		in.running.Store(false)
		if err != nil && !errors.Is(err, context.Canceled) {
			in.stats.SetFailure(err)
		}
	}()
	if in.client, err = pulsar.NewClient(in.clientOptions()); err != nil {
		return fmt.Errorf("pf: client: %w", err)
	}
	defer in.client.Close()
	defer in.closeProducers()
	if err := in.openProducers(); err != nil {
		return err
	}
	msgs := make(chan pulsar.ConsumerMessage, 1000)
	consumers, err := in.subscribe(msgs)
	for _, c := range consumers {
		defer c.Close()
	}
	if err != nil {
		return err
	}
	in.stats.SetFailure(nil)
	in.log.Info("function instance running", "inputs", in.conf.inputs(), "output", in.conf.SinkSpecTopic)
	if in.wfn != nil {
		return in.runWindowed(ctx, msgs)
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-in.fatal:
			return err
		case cm := <-msgs:
			in.handle(ctx, cm)
		}
	}
}

func (in *Instance) clientOptions() pulsar.ClientOptions {
	o := pulsar.ClientOptions{
		URL: in.conf.PulsarServiceURL, ConnectionTimeout: 10 * time.Second, OperationTimeout: 30 * time.Second,
		Logger:                     plog.NewLoggerWithSlog(slog.New(discardBelowWarn{in.log.Handler()})),
		TLSTrustCertsFilePath:      in.conf.TLSTrustCertsFilePath,
		TLSAllowInsecureConnection: in.conf.TLSAllowInsecureConnection,
		TLSValidateHostname:        in.conf.TLSHostnameVerificationEnable,
	}
	if in.conf.ClientAuthenticationPlugin != "" {
		if a, err := pulsar.NewAuthentication(in.conf.ClientAuthenticationPlugin, in.conf.ClientAuthenticationParameters); err == nil {
			o.Authentication = a
		} else {
			in.log.Warn("client authentication plugin not usable; connecting without", "plugin", in.conf.ClientAuthenticationPlugin, "err", err)
		}
	}
	return o
}

func (in *Instance) subscribe(msgs chan pulsar.ConsumerMessage) ([]pulsar.Consumer, error) {
	subType := pulsar.Shared
	switch in.conf.SubscriptionType {
	case SubFailover:
		subType = pulsar.Failover
	case SubKeyShared:
		subType = pulsar.KeyShared
	}
	if in.conf.ProcessingGuarantees == EffectivelyOnce {
		subType = pulsar.Failover
	}
	pos := pulsar.SubscriptionPositionLatest
	if in.conf.SubscriptionPosition == 1 {
		pos = pulsar.SubscriptionPositionEarliest
	}
	var consumers []pulsar.Consumer
	for _, inp := range in.conf.inputs() {
		o := pulsar.ConsumerOptions{
			SubscriptionName: in.conf.subscription(), Type: subType, SubscriptionInitialPosition: pos,
			MessageChannel: msgs, NackRedeliveryDelay: nackRedeliveryDelay,
			Name: fmt.Sprintf("%s-%d", in.conf.FQFN(), in.conf.InstanceID),
		}
		if inp.spec.RegexPattern {
			o.TopicsPattern = inp.topic
		} else {
			o.Topic = inp.topic
		}
		if inp.spec.ReceiverQueueSize > 0 {
			o.ReceiverQueueSize = inp.spec.ReceiverQueueSize
		}
		if sc, ok, known := inp.spec.consumerSchema(); ok {
			o.Schema = sc
		} else if !known {
			in.log.Warn("input schemaType is not a Pulsar schema type the Go instance knows; consuming it without a schema",
				"topic", inp.topic, "schemaType", inp.spec.SchemaType)
		}
		if in.conf.MaxMessageRetries > 0 {
			dlq := in.conf.DeadLetterTopic
			if dlq == "" && !inp.spec.RegexPattern {
				// The client's default, <topic>-<subscription>-DLQ, is no topic name when the
				// subscription is the FQFN (it holds '/').
				dlq = inp.topic + "-" + strings.ReplaceAll(in.conf.subscription(), "/", "-") + "-DLQ"
			}
			o.DLQ = &pulsar.DLQPolicy{MaxDeliveries: uint32(in.conf.MaxMessageRetries), DeadLetterTopic: dlq}
		}
		c, err := in.client.Subscribe(o)
		if err != nil {
			return consumers, fmt.Errorf("pf: subscribe %s (%s): %w", inp.topic, in.conf.subscription(), err)
		}
		consumers = append(consumers, c)
	}
	return consumers, nil
}

func (in *Instance) openProducers() error {
	var err error
	if in.conf.SinkSpecTopic != "" && in.conf.ProcessingGuarantees != EffectivelyOnce {
		if in.out, err = in.client.CreateProducer(pulsar.ProducerOptions{Topic: in.conf.SinkSpecTopic}); err != nil {
			return fmt.Errorf("pf: producer %s: %w", in.conf.SinkSpecTopic, err)
		}
	}
	in.eoOut = map[string]pulsar.Producer{}
	if in.conf.LogTopic != "" {
		if in.logProd, err = in.client.CreateProducer(pulsar.ProducerOptions{Topic: in.conf.LogTopic}); err != nil {
			return fmt.Errorf("pf: log topic producer %s: %w", in.conf.LogTopic, err)
		}
		in.userLog = slog.New(teeHandler{in.log.Handler(), &topicLogHandler{p: in.logProd, fqfn: in.conf.FQFN()}})
	}
	if in.window != nil && in.window.LateDataTopic != nil && *in.window.LateDataTopic != "" {
		if in.lateProd, err = in.client.CreateProducer(pulsar.ProducerOptions{Topic: *in.window.LateDataTopic}); err != nil {
			return fmt.Errorf("pf: late data producer %s: %w", *in.window.LateDataTopic, err)
		}
	}
	return nil
}

func (in *Instance) closeProducers() {
	for _, p := range []pulsar.Producer{in.out, in.logProd, in.lateProd} {
		if p != nil {
			p.Flush()
			p.Close()
		}
	}
	for _, p := range in.eoOut {
		p.Flush()
		p.Close()
	}
	in.extraMu.Lock()
	for _, p := range in.extra {
		p.Close()
	}
	in.extra = nil
	in.extraMu.Unlock()
}

// extraProducer is the producer FunctionContext.Publish uses for topic.
func (in *Instance) extraProducer(topic string) (pulsar.Producer, error) {
	in.extraMu.Lock()
	defer in.extraMu.Unlock()
	if p, ok := in.extra[topic]; ok {
		return p, nil
	}
	if in.client == nil {
		return nil, errors.New("pf: instance not running")
	}
	p, err := in.client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		return nil, fmt.Errorf("pf: producer %s: %w", topic, err)
	}
	if in.extra == nil {
		in.extra = map[string]pulsar.Producer{}
	}
	in.extra[topic] = p
	return p, nil
}

func toRecord(cm pulsar.ConsumerMessage) *Record {
	m := cm.Message
	return &Record{
		Topic: m.Topic(), Key: m.Key(), Properties: m.Properties(), EventTime: m.EventTime(), PublishTime: m.PublishTime(),
		Payload: m.Payload(), MessageID: m.ID().String(), msg: m, consumer: cm.Consumer,
	}
}

// ackMode says when the instance acknowledges a record itself.
func (in *Instance) autoAcks() bool {
	g := in.conf.ProcessingGuarantees
	return g != Manual && g != AtMostOnce && (in.conf.AutoACK || g == EffectivelyOnce || g == AtLeastOnce)
}

// invoke calls the handler with the panic turned into an error and timeoutMs as deadline.
func (in *Instance) invoke(ctx context.Context, rec *Record, w *Window) (out []byte, err error) {
	fc := &FunctionContext{inst: in, conf: in.conf, user: in.user, record: rec}
	ctx = context.WithValue(ctx, ctxKey{}, fc)
	if in.conf.TimeoutMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(in.conf.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	in.invoking.Store(time.Now().UnixNano())
	defer in.invoking.Store(0)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pf: function panicked: %v\n%s", r, debug.Stack())
		}
	}()
	if w != nil {
		return in.wfn.ProcessWindow(ctx, w)
	}
	return in.fn.Process(ctx, rec)
}

// handle processes one record.
func (in *Instance) handle(ctx context.Context, cm pulsar.ConsumerMessage) {
	in.stats.AddReceived(1)
	rec := toRecord(cm)
	if in.conf.ProcessingGuarantees == AtMostOnce {
		_ = cm.Consumer.Ack(cm.Message)
	}
	began := time.Now()
	out, err := in.invoke(ctx, rec, nil)
	if err != nil {
		in.stats.AddUserException(err)
		in.userLog.Warn("function failed on a record", "topic", rec.Topic, "id", rec.MessageID, "err", err)
		if in.conf.ProcessingGuarantees != AtMostOnce && in.conf.ProcessingGuarantees != Manual {
			cm.Consumer.Nack(cm.Message)
		}
		return
	}
	in.stats.AddSuccess(time.Since(began))
	if out == nil || in.conf.SinkSpecTopic == "" {
		if in.autoAcks() {
			_ = cm.Consumer.Ack(cm.Message)
		}
		return
	}
	in.send(ctx, rec, out, func(err error) {
		switch {
		case err == nil:
			if in.autoAcks() {
				_ = cm.Consumer.Ack(cm.Message)
			}
		case in.conf.ProcessingGuarantees == EffectivelyOnce:
			in.stats.AddSystemException(err)
			select {
			case in.fatal <- fmt.Errorf("pf: output %s: %w", in.conf.SinkSpecTopic, err):
			default:
			}
		default:
			in.stats.AddSystemException(err)
			if in.conf.ProcessingGuarantees != AtMostOnce && in.conf.ProcessingGuarantees != Manual {
				cm.Consumer.Nack(cm.Message)
			}
		}
	})
}

// send publishes one output for rec, calling done with the outcome.
func (in *Instance) send(ctx context.Context, rec *Record, out []byte, done func(error)) {
	msg := &pulsar.ProducerMessage{Payload: out, Key: rec.Key, EventTime: rec.EventTime}
	p := in.out
	if in.conf.ProcessingGuarantees == EffectivelyOnce {
		seq, err := sequenceID(rec.msg.ID())
		if err == nil {
			p, err = in.eoProducer(rec.Topic)
		}
		if err != nil {
			done(err)
			return
		}
		msg.SequenceID = &seq
	}
	p.SendAsync(ctx, msg, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done(err) })
}
