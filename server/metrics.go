package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/sampling"
)

// metrics are the server's Prometheus metrics, declared once.
type metrics struct {
	requests   *prometheus.CounterVec // endpoint, status
	errors     *prometheus.CounterVec // class
	tokensIn   prometheus.Counter
	tokensOut  prometheus.Counter
	batchSize  prometheus.Histogram
	stepFailed prometheus.Counter
	stepRetry  prometheus.Counter
	ttft       prometheus.Histogram
	tpot       prometheus.Histogram
	latency    prometheus.Histogram
}

func newMetrics(reg *prometheus.Registry, s *Server) *metrics {
	m := &metrics{
		requests:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hipgo_requests_total", Help: "API requests by endpoint and HTTP status."}, []string{"endpoint", "status"}),
		errors:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hipgo_errors_total", Help: "Failed requests by class (bad_request, queue_full, step_failed, launch_rejected, device_fault, device_lost, unavailable, cancelled, ...)."}, []string{"class"}),
		tokensIn:   prometheus.NewCounter(prometheus.CounterOpts{Name: "hipgo_prompt_tokens_total", Help: "Prompt tokens of finished requests."}),
		tokensOut:  prometheus.NewCounter(prometheus.CounterOpts{Name: "hipgo_completion_tokens_total", Help: "Generated tokens of finished requests."}),
		batchSize:  prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hipgo_batch_size", Help: "Sequences per batch step.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128}}),
		stepFailed: prometheus.NewCounter(prometheus.CounterOpts{Name: "hipgo_failed_steps_total", Help: "Batch steps that failed, retried ones included."}),
		stepRetry:  prometheus.NewCounter(prometheus.CounterOpts{Name: "hipgo_step_retries_total", Help: "Failed batch steps run again because they advanced no sequence (a launch rejection, not a device fault)."}),
		ttft:       prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hipgo_time_to_first_token_seconds", Help: "From the request's arrival to its first generated token.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		tpot:       prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hipgo_time_per_output_token_seconds", Help: "Mean time between a request's generated tokens after the first.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		latency:    prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hipgo_request_duration_seconds", Help: "From a generation request's arrival to its end.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 16)}),
	}
	reg.MustRegister(m.requests, m.errors, m.tokensIn, m.tokensOut, m.batchSize, m.stepFailed, m.stepRetry, m.ttft, m.tpot, m.latency, &stateCollector{s: s})
	return m
}

// OnStep is the scheduler hook that feeds the batch metrics: pass it as
// scheduler.Config.OnStep.
func (s *Server) OnStep(st scheduler.StepInfo) {
	s.metrics.batchSize.Observe(float64(st.Seqs))
	if st.Err != nil {
		s.metrics.stepFailed.Inc()
	}
	if st.Retry {
		s.metrics.stepRetry.Inc()
	}
}

// observe records a finished generation.
func (s *Server) observe(st *scheduler.Stream, start time.Time, err error) {
	u := st.Usage()
	s.metrics.tokensIn.Add(float64(u.PromptTokens))
	s.metrics.tokensOut.Add(float64(u.CompletionTokens))
	if !u.FirstToken.IsZero() {
		s.metrics.ttft.Observe(u.FirstToken.Sub(start).Seconds())
		if u.CompletionTokens > 1 {
			s.metrics.tpot.Observe(u.LastToken.Sub(u.FirstToken).Seconds() / float64(u.CompletionTokens-1))
		}
	}
	if err == nil {
		s.metrics.latency.Observe(time.Since(start).Seconds())
	}
}

// stateCollector reads the scheduler's state and the sampler's router
// counters at scrape time.
type stateCollector struct{ s *Server }

var (
	descDevice = prometheus.NewDesc("hipgo_device_state", "1 for the serving state: loading, ready, fallback (on the CPU after the device was lost), unavailable.", []string{"state", "backend"}, nil)
	descLost   = prometheus.NewDesc("hipgo_device_lost_timestamp_seconds", "When the device was lost (absent while it is not).", nil, nil)
	descQueue  = prometheus.NewDesc("hipgo_queue_depth", "Requests waiting for a batch slot.", nil, nil)
	descRun    = prometheus.NewDesc("hipgo_running_sequences", "Sequences in the batch.", nil, nil)
	descRouter = prometheus.NewDesc("hipgo_sampling_router_total", "The device sampler's router outcomes by reason (sampling.Reason); absent on the CPU.", []string{"reason"}, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descDevice, descLost, descQueue, descRun, descRouter} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	sch := c.s.sched.Load()
	if sch == nil {
		ch <- prometheus.MustNewConstMetric(descDevice, prometheus.GaugeValue, 1, "loading", "")
		return
	}
	st := sch.Status()
	state := "ready"
	switch {
	case st.Down != nil:
		state = "unavailable"
	case st.FellBack:
		state = "fallback"
	}
	ch <- prometheus.MustNewConstMetric(descDevice, prometheus.GaugeValue, 1, state, st.Model.Backend())
	if st.DeviceLost != nil {
		ch <- prometheus.MustNewConstMetric(descLost, prometheus.GaugeValue, float64(st.LostAt.UnixNano())/1e9)
	}
	ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(st.Queued))
	ch <- prometheus.MustNewConstMetric(descRun, prometheus.GaugeValue, float64(st.Running))
	if r := st.Model.SamplingRouter(); r != nil {
		for reason := sampling.Reason(0); reason.String() != unknownReason(reason); reason++ {
			ch <- prometheus.MustNewConstMetric(descRouter, prometheus.CounterValue, float64(r.Count(reason)), reason.String())
		}
	}
}

// unknownReason is how sampling.Reason prints a value past its last reason.
func unknownReason(r sampling.Reason) string { return fmt.Sprintf("Reason(%d)", uint8(r)) }

func asUnavailable(err error, target **scheduler.UnavailableError) bool {
	return errors.As(err, target)
}
