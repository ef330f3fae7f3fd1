package pf

import (
	"context"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/pkg/pf/window"
)

// defaultWatermarkInterval is Pulsar's watermarkEmitIntervalMs default.
const defaultWatermarkInterval = time.Second

// windowConfig turns the JSON windowConfig into the engine's.
func (wc *WindowConfig) engineConfig(eventTimeExtractor bool) window.Config {
	var c window.Config
	if wc.WindowLengthCount != nil {
		c.LengthCount = *wc.WindowLengthCount
	}
	if wc.WindowLengthDurationMs != nil {
		c.LengthDuration = time.Duration(*wc.WindowLengthDurationMs) * time.Millisecond
	}
	if wc.SlidingIntervalCount != nil {
		c.SlideCount = *wc.SlidingIntervalCount
	}
	if wc.SlidingIntervalDurationMs != nil {
		c.SlideDuration = time.Duration(*wc.SlidingIntervalDurationMs) * time.Millisecond
	}
	if wc.MaxLagMs != nil {
		c.MaxLag = time.Duration(*wc.MaxLagMs) * time.Millisecond
	}
	c.EventTime = eventTimeExtractor || (wc.TimestampExtractorClassName != nil && *wc.TimestampExtractorClassName != "")
	return c
}

// ValidateWindowConfig checks a windowConfig as the instance will run it.
func ValidateWindowConfig(wc *WindowConfig) error {
	c := wc.engineConfig(false)
	return c.Validate()
}

// tickInterval is how often the loop advances time: the watermark interval in event time, a
// quarter of the slide (10 ms to 250 ms) in processing time.
func (wc *WindowConfig) tickInterval(c window.Config) time.Duration {
	if c.EventTime {
		if wc.WatermarkEmitIntervalMs != nil && *wc.WatermarkEmitIntervalMs > 0 {
			return time.Duration(*wc.WatermarkEmitIntervalMs) * time.Millisecond
		}
		return defaultWatermarkInterval
	}
	d := c.SlideDuration
	if d == 0 {
		d = c.LengthDuration
	}
	return min(max(d/4, 10*time.Millisecond), 250*time.Millisecond)
}

type windowed struct {
	rec *Record
	cm  pulsar.ConsumerMessage
}

// runWindowed is Run's loop for a window function. Records are acknowledged when they
// expire from the last window that can hold them, after that window's output is stored.
func (in *Instance) runWindowed(ctx context.Context, msgs chan pulsar.ConsumerMessage) error {
	cfg := in.window.engineConfig(in.opts.TimestampExtractor != nil)
	mgr, err := window.New[windowed](cfg)
	if err != nil {
		return err
	}
	tick := time.NewTicker(in.window.tickInterval(cfg))
	defer tick.Stop()
	for {
		var fired []window.Window[windowed]
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-in.fatal:
			return err
		case now := <-tick.C:
			fired = mgr.Tick(now)
		case cm := <-msgs:
			in.stats.AddReceived(1)
			rec := toRecord(cm)
			if in.conf.ProcessingGuarantees == AtMostOnce {
				_ = cm.Consumer.Ack(cm.Message)
			}
			t := time.Now()
			if cfg.EventTime {
				t = in.eventTime(rec)
			}
			var late bool
			fired, late, err = mgr.Add(window.Event[windowed]{Value: windowed{rec, cm}, Time: t})
			switch {
			case err != nil:
				// Full: the record comes back later; memory stays bounded.
				in.stats.AddSystemException(err)
				cm.Consumer.Nack(cm.Message)
			case late:
				in.lateRecord(ctx, rec, cm)
			}
		}
		for _, w := range fired {
			in.fire(ctx, w)
		}
	}
}

func (in *Instance) eventTime(rec *Record) time.Time {
	if in.opts.TimestampExtractor != nil {
		return in.opts.TimestampExtractor(rec)
	}
	if !rec.EventTime.IsZero() {
		return rec.EventTime
	}
	return rec.PublishTime
}

// lateRecord sends a record that arrived behind the watermark to lateDataTopic (if set),
// then acknowledges it.
func (in *Instance) lateRecord(ctx context.Context, rec *Record, cm pulsar.ConsumerMessage) {
	ack := func(err error) {
		if err != nil {
			in.stats.AddSystemException(err)
			cm.Consumer.Nack(cm.Message)
			return
		}
		if in.autoAcks() {
			_ = cm.Consumer.Ack(cm.Message)
		}
	}
	if in.lateProd == nil {
		ack(nil)
		return
	}
	in.lateProd.SendAsync(ctx, &pulsar.ProducerMessage{Payload: rec.Payload, Key: rec.Key, Properties: rec.Properties, EventTime: rec.EventTime},
		func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { ack(err) })
}

// fire runs the window function over one window and acknowledges what expired.
func (in *Instance) fire(ctx context.Context, w window.Window[windowed]) {
	settle := func(err error) {
		for _, e := range w.Expired {
			switch {
			case err != nil && in.conf.ProcessingGuarantees != AtMostOnce:
				e.Value.cm.Consumer.Nack(e.Value.cm.Message)
			case err == nil && in.autoAcks():
				_ = e.Value.cm.Consumer.Ack(e.Value.cm.Message)
			}
		}
	}
	if len(w.Events) == 0 {
		settle(nil)
		return
	}
	ww := &Window{Start: w.Start, End: w.End}
	for _, e := range w.Events {
		ww.Records = append(ww.Records, e.Value.rec)
	}
	began := time.Now()
	out, err := in.invoke(ctx, nil, ww)
	if err != nil {
		in.stats.AddUserException(err)
		settle(err)
		return
	}
	in.stats.AddSuccess(time.Since(began))
	if out == nil || in.conf.SinkSpecTopic == "" {
		settle(nil)
		return
	}
	last := ww.Records[len(ww.Records)-1]
	in.send(ctx, &Record{Key: last.Key, EventTime: w.End}, out, func(err error) {
		if err != nil {
			in.stats.AddSystemException(err)
		}
		settle(err)
	})
}
