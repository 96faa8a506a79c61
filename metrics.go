package perch

import (
	"time"
)

// MetricsSummary is GET /admin/metrics/summary: counts read from the
// database, for operators. Money is in the plans' currency, as
// Plan.PriceMonthly.
type MetricsSummary struct {
	Users                    int64            `json:"users"`
	UsersActive7d            int64            `json:"users_active_7d"` // signed in, or renewed a sign-in, in the last 7 days
	Orgs                     int64            `json:"orgs"`
	OrgsByPlan               map[string]int64 `json:"orgs_by_plan"`            // every plan, 0 included
	SubscriptionsByStatus    map[string]int64 `json:"subscriptions_by_status"` // organisations by plan status
	MRR                      float64          `json:"mrr"`                     // the monthly price of every organisation whose status is active
	Notifications24h         int64            `json:"notifications_24h"`
	NotificationsBySource24h map[string]int64 `json:"notifications_by_source_24h"`
	ConnectedClients         int64            `json:"connected_clients"` // WebSockets, over every instance seen in the last minute
	WebhookTokens            int64            `json:"webhook_tokens"`
	Workflows                int64            `json:"workflows"`
	WorkflowRuns24h          int64            `json:"workflow_runs_24h"`
}

// The series of GET /admin/metrics.
const (
	MetricNotifications = "notifications" // notifications stored
	MetricSignups       = "signups"       // accounts created
	MetricActiveUsers   = "active_users"  // distinct users who signed in
	MetricWorkflowRuns  = "workflow_runs" // workflow runs (none until workflows exist)
)

// Intervals of a series.
const (
	IntervalHour = "hour"
	IntervalDay  = "day"
)

// The longest range a series may cover, by interval.
const (
	MaxHourlySpan = 31 * 24 * time.Hour
	MaxDailySpan  = 366 * 24 * time.Hour
)

// DefaultMetricSpan is the range of a series when the request names none:
// the last 7 days, by day.
const DefaultMetricSpan = 7 * 24 * time.Hour

// MetricPoint is one bucket of a series: its start and its count.
type MetricPoint struct {
	T     time.Time `json:"t"`
	Value int64     `json:"value"`
}

// MetricQuery asks for one series: Metric counted per Interval over
// [From, To). ParseMetricQuery makes a valid one.
type MetricQuery struct {
	Metric   string
	Interval string
	From, To time.Time
}

// ParseMetricQuery reads the parameters of GET /admin/metrics, each ""
// when absent. The metric is required; the interval defaults to day; from
// and to are RFC 3339, to after from; to defaults to now, and from to 7
// days before to. The range may span at most 31 days by hour and 366 by
// day. Any problem is EBADREQUEST.
func ParseMetricQuery(metric, interval, from, to string, now time.Time) (MetricQuery, error) {
	q := MetricQuery{Metric: metric, Interval: interval}
	switch metric {
	case MetricNotifications, MetricSignups, MetricActiveUsers, MetricWorkflowRuns:
	case "":
		return MetricQuery{}, Errorf(EBADREQUEST, "metric is required: notifications, signups, active_users or workflow_runs.")
	default:
		return MetricQuery{}, Errorf(EBADREQUEST, "metric must be notifications, signups, active_users or workflow_runs.")
	}
	switch interval {
	case "":
		q.Interval = IntervalDay
	case IntervalHour, IntervalDay:
	default:
		return MetricQuery{}, Errorf(EBADREQUEST, "interval must be hour or day.")
	}
	var err error
	q.To = now.UTC()
	if to != "" {
		if q.To, err = time.Parse(time.RFC3339, to); err != nil {
			return MetricQuery{}, Errorf(EBADREQUEST, "to must be an RFC 3339 time, such as 2026-01-31T00:00:00Z.")
		}
	}
	q.From = q.To.Add(-DefaultMetricSpan)
	if from != "" {
		if q.From, err = time.Parse(time.RFC3339, from); err != nil {
			return MetricQuery{}, Errorf(EBADREQUEST, "from must be an RFC 3339 time, such as 2026-01-01T00:00:00Z.")
		}
	}
	q.From, q.To = q.From.UTC(), q.To.UTC()
	if !q.To.After(q.From) {
		return MetricQuery{}, Errorf(EBADREQUEST, "to must be after from.")
	}
	if q.To.Sub(q.From) > q.maxSpan() {
		return MetricQuery{}, Errorf(EBADREQUEST, "The range may span at most %d days by %s.", int(q.maxSpan()/(24*time.Hour)), q.Interval)
	}
	return q, nil
}

func (q MetricQuery) maxSpan() time.Duration {
	if q.Interval == IntervalHour {
		return MaxHourlySpan
	}
	return MaxDailySpan
}

// Step is the length of one bucket.
func (q MetricQuery) Step() time.Duration {
	if q.Interval == IntervalHour {
		return time.Hour
	}
	return 24 * time.Hour
}

// Buckets are the series' buckets, every one whole, aligned in UTC (hours
// on the hour, days at midnight): from the one that holds From to the one
// that holds the last instant before To. Each point has its start and a
// zero value.
func (q MetricQuery) Buckets() []MetricPoint {
	step := q.Step()
	start := q.From.UTC().Truncate(step)
	n := int((q.To.Sub(start) + step - 1) / step)
	points := make([]MetricPoint, n)
	for i := range points {
		points[i].T = start.Add(time.Duration(i) * step)
	}
	return points
}
