package connector

import (
	"strconv"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/pkg/pf/pfpb"
)

// latestExceptions is how many recent exceptions a status keeps (as Pulsar).
const latestExceptions = 10

// stats are an instance's counters, reported in the shape the worker reports every
// instance (pfpb.FunctionStatus); the admin API renames them for sources and sinks:
//
//	FunctionStatus field      source status            sink status
//	numReceived               numReceivedFromSource    numReadFromPulsar
//	numSuccessfullyProcessed  numWritten               numWrittenToSink
//	numUserExceptions         numSourceExceptions      numSinkExceptions
//	numSystemExceptions       numSystemExceptions      numSystemExceptions
//	lastInvocationTime        lastReceivedTime         lastReceivedTime
//
// The "1min" figures are those since the last metrics reset.
type stats struct {
	mu                       sync.Mutex
	received, written        int64
	user, system             int64
	rReceived, rWritten      int64
	rUser, rSystem           int64
	dlq                      int64
	latSum, rLatSum          time.Duration
	latN, rLatN              int64
	lastReceived             time.Time
	latestUser, latestSystem []*pfpb.FunctionStatus_ExceptionInformation
	failure                  string
}

func (s *stats) addReceived(n int64) {
	s.mu.Lock()
	s.received += n
	s.rReceived += n
	s.lastReceived = time.Now()
	s.mu.Unlock()
}

func (s *stats) addWritten(lat time.Duration) {
	s.mu.Lock()
	s.written++
	s.rWritten++
	s.latSum += lat
	s.rLatSum += lat
	s.latN++
	s.rLatN++
	s.mu.Unlock()
}

func (s *stats) addDeadLettered() {
	s.mu.Lock()
	s.dlq++
	s.mu.Unlock()
}

func push(list []*pfpb.FunctionStatus_ExceptionInformation, err error) []*pfpb.FunctionStatus_ExceptionInformation {
	list = append(list, &pfpb.FunctionStatus_ExceptionInformation{ExceptionString: err.Error(), MsSinceEpoch: time.Now().UnixMilli()})
	if len(list) > latestExceptions {
		list = list[len(list)-latestExceptions:]
	}
	return list
}

// addConnectorException counts a source or sink exception.
func (s *stats) addConnectorException(err error) {
	s.mu.Lock()
	s.user++
	s.rUser++
	s.latestUser = push(s.latestUser, err)
	s.mu.Unlock()
}

func (s *stats) addSystemException(err error) {
	s.mu.Lock()
	s.system++
	s.rSystem++
	s.latestSystem = push(s.latestSystem, err)
	s.mu.Unlock()
}

func (s *stats) setFailure(err error) {
	s.mu.Lock()
	s.failure = ""
	if err != nil {
		s.failure = err.Error()
	}
	s.mu.Unlock()
}

func avg(sum time.Duration, n int64) float64 {
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
		NumReceived: s.received, NumSuccessfullyProcessed: s.written,
		NumUserExceptions: s.user, NumSystemExceptions: s.system,
		LatestUserExceptions:   append([]*pfpb.FunctionStatus_ExceptionInformation(nil), s.latestUser...),
		LatestSystemExceptions: append([]*pfpb.FunctionStatus_ExceptionInformation(nil), s.latestSystem...),
		AverageLatency:         avg(s.latSum, s.latN),
		InstanceId:             strconv.Itoa(instanceID), WorkerId: workerID,
	}
	if !s.lastReceived.IsZero() {
		st.LastInvocationTime = s.lastReceived.UnixMilli()
	}
	return st
}

func (s *stats) metrics(reset bool) *pfpb.MetricsData {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := &pfpb.MetricsData{
		ReceivedTotal: s.received, ReceivedTotal_1Min: s.rReceived,
		ProcessedSuccessfullyTotal: s.written, ProcessedSuccessfullyTotal_1Min: s.rWritten,
		SystemExceptionsTotal: s.system, SystemExceptionsTotal_1Min: s.rSystem,
		UserExceptionsTotal: s.user, UserExceptionsTotal_1Min: s.rUser,
		AvgProcessLatency: avg(s.latSum, s.latN), AvgProcessLatency_1Min: avg(s.rLatSum, s.rLatN),
		UserMetrics: map[string]float64{"deadLetteredTotal": float64(s.dlq)},
	}
	if !s.lastReceived.IsZero() {
		m.LastInvocation = s.lastReceived.UnixMilli()
	}
	if reset {
		s.rReceived, s.rWritten, s.rUser, s.rSystem, s.rLatSum, s.rLatN = 0, 0, 0, 0, 0, 0
	}
	return m
}
