package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/pkg/pf/pfpb"
)

// supervisor keeps one assigned instance running: it starts it, health-checks it every
// instanceLivenessCheckFreqMs, kills it when it hangs or outgrows resources.ram, and
// restarts it with exponential backoff (1 s doubling to functionsMaxRestartBackoffMs,
// back to 1 s after a minute of healthy running). A crash, hang or limit is reported in
// status (numRestarts, failureException) and never stops the worker.
type supervisor struct {
	log       *slog.Logger
	fqfn      string
	id        int
	component ComponentType
	workerID  string
	// assignment is what this supervisor runs; a changed one replaces it.
	assignment Assignment
	start      func(ctx context.Context) (RunningInstance, error)
	liveness   time.Duration
	maxWait    time.Duration
	ramLimit   int64

	mu       sync.Mutex
	cur      RunningInstance
	restarts int64
	lastErr  string
	stopped  bool

	cancel context.CancelFunc
	done   chan struct{}
}

const minRestartBackoff = time.Second

func (s *supervisor) run(ctx context.Context) {
	defer close(s.done)
	wait := minRestartBackoff
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(wait*2, s.maxWait)
			s.mu.Lock()
			s.restarts++
			s.mu.Unlock()
		}
		began := time.Now()
		inst, err := s.start(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.fail(fmt.Errorf("start: %w", err))
			continue
		}
		s.mu.Lock()
		s.cur = inst
		s.mu.Unlock()
		err = s.watch(ctx, inst)
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = inst.Stop(stopCtx)
		cancel()
		s.mu.Lock()
		s.cur = nil
		s.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		s.fail(err)
		if time.Since(began) > time.Minute {
			wait = minRestartBackoff
		}
	}
}

func (s *supervisor) fail(err error) {
	s.log.Warn("function instance failed; restarting with backoff", "function", s.fqfn, "instance", s.id, "err", err)
	s.mu.Lock()
	s.lastErr = err.Error()
	s.mu.Unlock()
}

// watch returns why inst has to be restarted.
func (s *supervisor) watch(ctx context.Context, inst RunningInstance) error {
	t := time.NewTicker(s.liveness)
	defer t.Stop()
	failedChecks := 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-inst.Done():
			if err := inst.Err(); err != nil {
				return fmt.Errorf("instance exited: %w", err)
			}
			return errors.New("instance exited")
		case <-t.C:
			if s.ramLimit > 0 {
				if rss := inst.MemoryBytes(); rss > s.ramLimit {
					return fmt.Errorf("instance uses %d bytes of memory, over resources.ram %d: killed", rss, s.ramLimit)
				}
			}
			hctx, cancel := context.WithTimeout(ctx, max(s.liveness, 5*time.Second))
			err := inst.Health(hctx)
			cancel()
			if err == nil {
				failedChecks = 0
				continue
			}
			// Two failed checks in a row: a process that does not answer, or one whose
			// invocation hangs past its timeout.
			if failedChecks++; failedChecks >= 2 {
				return fmt.Errorf("health check failed: %w: killed", err)
			}
		}
	}
}

// status is the instance's status with the supervisor's restarts and last failure.
func (s *supervisor) status(ctx context.Context) *pfpb.FunctionStatus {
	s.mu.Lock()
	cur, restarts, lastErr, stopped := s.cur, s.restarts, s.lastErr, s.stopped
	s.mu.Unlock()
	var st *pfpb.FunctionStatus
	if cur != nil {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, _ = cur.Status(sctx)
		cancel()
	}
	if st == nil {
		st = &pfpb.FunctionStatus{}
	}
	st.NumRestarts = restarts
	st.WorkerId = s.workerID
	st.InstanceId = fmt.Sprint(s.id)
	if st.FailureException == "" {
		st.FailureException = lastErr
	}
	if stopped {
		st.Running = false
	}
	return st
}

func (s *supervisor) metrics(ctx context.Context, reset bool) *pfpb.MetricsData {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur == nil {
		return &pfpb.MetricsData{}
	}
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := cur.Metrics(mctx, reset)
	if err != nil {
		return &pfpb.MetricsData{}
	}
	return m
}

// stop ends the supervision and the instance, and waits.
func (s *supervisor) stop() {
	s.cancel()
	<-s.done
}
