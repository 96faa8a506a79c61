package web

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/perch-dev/perch"
)

// metricRange is a time range the Overview's charts may show.
type metricRange struct {
	Key, Name string
	Span      time.Duration
	Interval  string
}

// metricRanges are the Overview's ranges; the first is the default.
var metricRanges = []metricRange{
	{"7d", "7 days", 7 * 24 * time.Hour, perch.IntervalDay},
	{"24h", "24 hours", 24 * time.Hour, perch.IntervalHour},
	{"30d", "30 days", 30 * 24 * time.Hour, perch.IntervalDay},
	{"90d", "90 days", 90 * 24 * time.Hour, perch.IntervalDay},
}

// metricCharts are the series the Overview draws, with their names.
var metricCharts = []struct{ Metric, Name string }{
	{perch.MetricNotifications, "Notifications"},
	{perch.MetricSignups, "Sign-ups"},
	{perch.MetricActiveUsers, "Active users"},
	{perch.MetricWorkflowRuns, "Workflow runs"},
}

// overviewData is what the Overview shows.
type overviewData struct {
	Summary perch.MetricsSummary
	Ranges  []metricRange
	Range   metricRange
	Charts  []chart
}

// count is one named number of a breakdown, for a table.
type count struct {
	Name  string
	Value int64
}

// breakdown is a map of counts as rows, in the order of their names.
func breakdown(m map[string]int64) []count {
	rows := make([]count, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		rows = append(rows, count{k, m[k]})
	}
	return rows
}

// AdminOverview is the Admin section's first page: the platform's numbers,
// counted in the database, and charts of notifications, sign-ups, active
// users and workflow runs over a range (?range=, 7 days by default).
func (d *Dashboard) AdminOverview(w http.ResponseWriter, r *http.Request, c *call) error {
	data := &overviewData{Ranges: metricRanges, Range: metricRanges[0]}
	for _, mr := range metricRanges {
		if mr.Key == r.URL.Query().Get("range") {
			data.Range = mr
		}
	}
	if err := c.do(http.MethodGet, "/api/v1/admin/metrics/summary", nil, &data.Summary); err != nil {
		return err
	}
	to := c.d.now().UTC()
	q := url.Values{"interval": {data.Range.Interval}, "from": {to.Add(-data.Range.Span).Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}}
	for _, m := range metricCharts {
		q.Set("metric", m.Metric)
		ch := chart{ID: "chart-" + m.Metric, Title: m.Name + " per " + data.Range.Interval, Interval: data.Range.Interval}
		if err := c.do(http.MethodGet, "/api/v1/admin/metrics?"+q.Encode(), nil, &ch.Points); err != nil {
			return err
		}
		data.Charts = append(data.Charts, ch)
	}
	v := adminView("overview", "Admin")
	v.Data = data
	return c.page("admin_overview", v)
}
