// Package metrics is Worktrack's Prometheus instrumentation
// (prometheus/client_golang): HTTP requests by API, route template, method
// and status; webhook delivery outcomes and backlog; GraphQL
// subscriptions; the database pools; and Go's runtime and process
// collectors. GET /metrics serves it (httpedge.Edge.MountMetrics).
package metrics

import (
	"context"
	"database/sql"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/worktrack/worktrack/core/domain"
)

// Metrics holds the registry and the instruments the process updates.
type Metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	deliveries *prometheus.CounterVec
	refusals   *prometheus.CounterVec
	seatWait   prometheus.Histogram
}

// New registers the request and delivery instruments and Go's runtime and
// process collectors on a registry of its own.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "worktrack_http_requests_total",
			Help: "HTTP requests answered, by API (rest, graphql, other), route template, method and status.",
		}, []string{"api", "route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "worktrack_http_request_duration_seconds",
			Help:    "Time from a request's arrival to its answer, by API, route template and method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"api", "route", "method"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "worktrack_webhook_deliveries_total",
			Help: "Webhook delivery attempts by outcome: succeeded, retry_scheduled, or failed (for good).",
		}, []string{"outcome"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "worktrack_refusals_total",
			Help: "Requests, operations and sockets refused for a shared limit, by the limit (reason): auth_failures, rate_limit, graphql_cost, subscriptions_per_key, sockets_per_key, pending_sockets, socket_init_timeout, webhooks_per_workspace, api_keys_per_user.",
		}, []string{"reason"}),
	}
	m.seatWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "worktrack_db_seat_wait_seconds",
		Help:    "How long each statement or transaction of an API request waited for its database seats (0 when free).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	})
	for _, o := range []string{outcomeSucceeded, outcomeRetry, outcomeFailed} {
		m.deliveries.WithLabelValues(o) // present at 0 from the start
	}
	for _, l := range domain.Limits {
		m.refusals.WithLabelValues(l)
	}
	reg.MustRegister(m.requests, m.duration, m.deliveries, m.refusals, m.seatWait,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// The outcome label's values.
const (
	outcomeSucceeded = "succeeded"
	outcomeRetry     = "retry_scheduled"
	outcomeFailed    = "failed"
)

// ObserveRequest counts one answered request. route is the route template
// ("" when no route matched), never the raw path, so the label's values
// stay few.
func (m *Metrics) ObserveRequest(route, method string, status int, took time.Duration) {
	api := apiOf(route)
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(api, route, method, strconv.Itoa(status)).Inc()
	if status == http.StatusSwitchingProtocols {
		// A WebSocket: its "request" lasts as long as the socket, which is
		// not a latency (worktrack_graphql_subscriptions counts them).
		return
	}
	m.duration.WithLabelValues(api, route, method).Observe(took.Seconds())
}

// ObserveRefusal counts a refusal for a shared limit, by the limit's name
// (domain.Limit…).
func (m *Metrics) ObserveRefusal(limit string) {
	m.refusals.WithLabelValues(limit).Inc()
}

func apiOf(route string) string {
	switch {
	case route == "/v1" || strings.HasPrefix(route, "/v1/"):
		return "rest"
	case route == "/graphql" || strings.HasPrefix(route, "/graphql/"):
		return "graphql"
	}
	return "other"
}

// ObserveDelivery counts an attempt's outcome (app.DispatcherOptions.OnAttempt).
func (m *Metrics) ObserveDelivery(d domain.Delivery) {
	switch d.Status {
	case domain.DeliverySucceeded:
		m.deliveries.WithLabelValues(outcomeSucceeded).Inc()
	case domain.DeliveryFailed:
		m.deliveries.WithLabelValues(outcomeFailed).Inc()
	default:
		m.deliveries.WithLabelValues(outcomeRetry).Inc()
	}
}

// WatchPool exports a database pool's statistics (go_sql_* with
// db_name=name).
func (m *Metrics) WatchPool(name string, db *sql.DB) {
	m.reg.MustRegister(collectors.NewDBStatsCollector(db, name))
}

// BacklogFunc reports the pending deliveries and when the oldest was
// created (ok false when none is pending).
type BacklogFunc func(ctx context.Context) (pending int64, oldest time.Time, ok bool, err error)

// BacklogTTL is how long a reading of the delivery backlog serves the
// scrapes that follow: a scrape costs no more than a constant, however
// often /metrics is asked.
const BacklogTTL = 5 * time.Second

// WatchBacklog exports the delivery backlog, read from the database at most
// once every BacklogTTL (bounded by 2 s; a failed read leaves the two series
// out of that scrape).
func (m *Metrics) WatchBacklog(backlog BacklogFunc) {
	m.reg.MustRegister(&backlogCollector{backlog: backlog})
}

// WatchSubscriptions exports the open GraphQL subscriptions of this process.
func (m *Metrics) WatchSubscriptions(open func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "worktrack_graphql_subscriptions",
		Help: "GraphQL subscriptions open on this process.",
	}, func() float64 { return float64(open()) }))
}

// WatchTraces exports how many spans the trace exporter's queue dropped
// because it was full (a collector down or slower than the spans come).
func (m *Metrics) WatchTraces(dropped func() uint64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "worktrack_trace_spans_dropped_total",
		Help: "Spans dropped because the trace export queue was full.",
	}, func() float64 { return float64(dropped()) }))
}

// ObserveSeatWait observes how long one piece of database work waited for
// its seats (zero when it found them free).
func (m *Metrics) ObserveSeatWait(d time.Duration) { m.seatWait.Observe(d.Seconds()) }

// SeatsFunc reads the database seats: how many there are, how many are
// held, and how many pieces of work wait for them.
type SeatsFunc func() (capacity, inUse, waiting int)

// WatchSeats exports the database seats (docs/operations.md#the-database-budget).
func (m *Metrics) WatchSeats(read SeatsFunc) {
	gauge := func(name, help string, pick func(capacity, inUse, waiting int) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return float64(pick(read())) })
	}
	m.reg.MustRegister(
		gauge("worktrack_db_seats", "Seats of database work in the process: how much runs at once.",
			func(c, _, _ int) int { return c }),
		gauge("worktrack_db_seats_in_use", "Seats held now by running statements and transactions.",
			func(_, u, _ int) int { return u }),
		gauge("worktrack_db_seat_queue", "Statements and transactions waiting for seats now, all workspaces.",
			func(_, _, w int) int { return w }),
	)
}

// Handler serves the exposition.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

var (
	pendingDesc = prometheus.NewDesc("worktrack_webhook_pending_deliveries",
		"Webhook deliveries waiting for an attempt or a retry, in every workspace.", nil, nil)
	oldestDesc = prometheus.NewDesc("worktrack_webhook_oldest_pending_seconds",
		"Age of the oldest pending webhook delivery; 0 when none is pending.", nil, nil)
)

type backlogCollector struct {
	backlog BacklogFunc

	mu   sync.Mutex // held while reading, so that concurrent scrapes read once
	read time.Time  // when the reading below was made; zero before the first
	last backlogReading
}

type backlogReading struct {
	pending int64
	oldest  time.Time
	ok      bool
}

// reading is the backlog as read at most BacklogTTL ago.
func (c *backlogCollector) reading() (backlogReading, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.read.IsZero() && time.Since(c.read) < BacklogTTL {
		return c.last, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pending, oldest, ok, err := c.backlog(ctx)
	if err != nil {
		return backlogReading{}, err
	}
	c.last, c.read = backlogReading{pending: pending, oldest: oldest, ok: ok}, time.Now()
	return c.last, nil
}

func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- oldestDesc
}

func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	r, err := c.reading()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(pendingDesc, err)
		return
	}
	age := 0.0
	if r.ok {
		age = max(0, time.Since(r.oldest).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(r.pending))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, age)
}
