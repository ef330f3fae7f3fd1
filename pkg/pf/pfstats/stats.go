// Package pfstats is an instance's counters in the shape the functions worker reports
// every instance (pfpb.FunctionStatus, pfpb.MetricsData): totals since start, and a window
// that Metrics(true) resets (the "1min" figures, which the worker resets every minute).
// The Go SDK's function instances (pkg/pf) and the connector runtime's sources and sinks
// (internal/io/connector) count with it; the admin API renames the fields for connectors.
package pfstats

import (
	"strconv"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/pkg/pf/pfpb"
)

// maxLatestExceptions is how many recent exceptions a status keeps (Pulsar keeps 10).
const maxLatestExceptions = 10

// Stats is safe for concurrent use; the zero value is ready.
type Stats struct {
	mu                               sync.Mutex
	received, success, user, system  int64
	rReceived, rSuccess, rUser, rSys int64
	latencySum, rLatencySum          time.Duration
	latencyN, rLatencyN              int64
	lastInvocation                   time.Time
	latestUser, latestSystem         []*pfpb.FunctionStatus_ExceptionInformation
	userMetrics                      map[string]float64
	failure                          string
}

// AddReceived counts n received messages.
func (s *Stats) AddReceived(n int64) {
	s.mu.Lock()
	s.received += n
	s.rReceived += n
	s.lastInvocation = time.Now()
	s.mu.Unlock()
}

// AddSuccess counts one message processed (written, for a connector) in lat.
func (s *Stats) AddSuccess(lat time.Duration) {
	s.mu.Lock()
	s.success++
	s.rSuccess++
	s.latencySum += lat
	s.latencyN++
	s.rLatencySum += lat
	s.rLatencyN++
	s.mu.Unlock()
}

func pushException(list []*pfpb.FunctionStatus_ExceptionInformation, err error) []*pfpb.FunctionStatus_ExceptionInformation {
	list = append(list, &pfpb.FunctionStatus_ExceptionInformation{ExceptionString: err.Error(), MsSinceEpoch: time.Now().UnixMilli()})
	if len(list) > maxLatestExceptions {
		list = list[len(list)-maxLatestExceptions:]
	}
	return list
}

// AddUserException counts an exception of the user's code (a connector's, for sources
// and sinks).
func (s *Stats) AddUserException(err error) {
	s.mu.Lock()
	s.user++
	s.rUser++
	s.latestUser = pushException(s.latestUser, err)
	s.mu.Unlock()
}

// AddSystemException counts an exception of the runtime.
func (s *Stats) AddSystemException(err error) {
	s.mu.Lock()
	s.system++
	s.rSys++
	s.latestSystem = pushException(s.latestSystem, err)
	s.mu.Unlock()
}

// SetFailure records why the instance stopped (nil: it runs).
func (s *Stats) SetFailure(err error) {
	s.mu.Lock()
	s.failure = ""
	if err != nil {
		s.failure = err.Error()
	}
	s.mu.Unlock()
}

// SetUserMetric sets a user metric, reported in MetricsData.UserMetrics.
func (s *Stats) SetUserMetric(name string, v float64) {
	s.mu.Lock()
	if s.userMetrics == nil {
		s.userMetrics = map[string]float64{}
	}
	s.userMetrics[name] = v
	s.mu.Unlock()
}

// AddUserMetric adds delta to a user metric.
func (s *Stats) AddUserMetric(name string, delta float64) {
	s.mu.Lock()
	if s.userMetrics == nil {
		s.userMetrics = map[string]float64{}
	}
	s.userMetrics[name] += delta
	s.mu.Unlock()
}

func avgMs(sum time.Duration, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(sum.Microseconds()) / 1000 / float64(n)
}

// Status is the instance's FunctionStatus.
func (s *Stats) Status(running bool, instanceID int, workerID string) *pfpb.FunctionStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &pfpb.FunctionStatus{
		Running: running, FailureException: s.failure,
		NumReceived: s.received, NumSuccessfullyProcessed: s.success,
		NumUserExceptions: s.user, NumSystemExceptions: s.system,
		LatestUserExceptions:   append([]*pfpb.FunctionStatus_ExceptionInformation(nil), s.latestUser...),
		LatestSystemExceptions: append([]*pfpb.FunctionStatus_ExceptionInformation(nil), s.latestSystem...),
		AverageLatency:         avgMs(s.latencySum, s.latencyN),
		InstanceId:             strconv.Itoa(instanceID), WorkerId: workerID,
	}
	if !s.lastInvocation.IsZero() {
		st.LastInvocationTime = s.lastInvocation.UnixMilli()
	}
	return st
}

// Metrics is the instance's MetricsData; reset starts a new window.
func (s *Stats) Metrics(reset bool) *pfpb.MetricsData {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := &pfpb.MetricsData{
		ReceivedTotal: s.received, ReceivedTotal_1Min: s.rReceived,
		ProcessedSuccessfullyTotal: s.success, ProcessedSuccessfullyTotal_1Min: s.rSuccess,
		SystemExceptionsTotal: s.system, SystemExceptionsTotal_1Min: s.rSys,
		UserExceptionsTotal: s.user, UserExceptionsTotal_1Min: s.rUser,
		AvgProcessLatency: avgMs(s.latencySum, s.latencyN), AvgProcessLatency_1Min: avgMs(s.rLatencySum, s.rLatencyN),
		UserMetrics: make(map[string]float64, len(s.userMetrics)),
	}
	if !s.lastInvocation.IsZero() {
		m.LastInvocation = s.lastInvocation.UnixMilli()
	}
	for k, v := range s.userMetrics {
		m.UserMetrics[k] = v
	}
	if reset {
		s.rReceived, s.rSuccess, s.rUser, s.rSys, s.rLatencySum, s.rLatencyN = 0, 0, 0, 0, 0, 0
	}
	return m
}
