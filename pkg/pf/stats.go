package pf

import (
	"strconv"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/pkg/pf/pfpb"
)

// maxLatestExceptions is how many recent exceptions a status keeps (Pulsar keeps 10).
const maxLatestExceptions = 10

// stats are an instance's counters: totals since start, and a window reset by
// GetAndResetMetrics (the "1min" figures, which the worker resets every minute).
type stats struct {
	mu                               sync.Mutex
	received, success, user, system  int64
	rReceived, rSuccess, rUser, rSys int64
	latencySum                       time.Duration
	latencyN                         int64
	rLatencySum                      time.Duration
	rLatencyN                        int64
	lastInvocation                   time.Time
	latestUser, latestSystem         []*pfpb.FunctionStatus_ExceptionInformation
	userMetrics                      map[string]float64
	failure                          string
}

func (s *stats) addReceived() {
	s.mu.Lock()
	s.received++
	s.rReceived++
	s.lastInvocation = time.Now()
	s.mu.Unlock()
}

func (s *stats) addSuccess(lat time.Duration) {
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

func (s *stats) addUserException(err error) {
	s.mu.Lock()
	s.user++
	s.rUser++
	s.latestUser = pushException(s.latestUser, err)
	s.mu.Unlock()
}

func (s *stats) addSystemException(err error) {
	s.mu.Lock()
	s.system++
	s.rSys++
	s.latestSystem = pushException(s.latestSystem, err)
	s.mu.Unlock()
}

func (s *stats) setFailure(err error) {
	s.mu.Lock()
	if err == nil {
		s.failure = ""
	} else {
		s.failure = err.Error()
	}
	s.mu.Unlock()
}

func (s *stats) userMetric(name string, v float64) {
	s.mu.Lock()
	if s.userMetrics == nil {
		s.userMetrics = map[string]float64{}
	}
	s.userMetrics[name] = v
	s.mu.Unlock()
}

func avgMs(sum time.Duration, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(sum.Microseconds()) / 1000 / float64(n)
}

func (s *stats) status(running bool, instanceID int, workerID string) *pfpb.FunctionStatus {
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

func (s *stats) metrics(reset bool) *pfpb.MetricsData {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := &pfpb.MetricsData{
		ReceivedTotal: s.received, ReceivedTotal_1Min: s.rReceived,
		ProcessedSuccessfullyTotal: s.success, ProcessedSuccessfullyTotal_1Min: s.rSuccess,
		SystemExceptionsTotal: s.system, SystemExceptionsTotal_1Min: s.rSys,
		UserExceptionsTotal: s.user, UserExceptionsTotal_1Min: s.rUser,
		AvgProcessLatency: avgMs(s.latencySum, s.latencyN), AvgProcessLatency_1Min: avgMs(s.rLatencySum, s.rLatencyN),
		UserMetrics: map[string]float64{},
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
