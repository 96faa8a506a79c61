package perch

import (
	"testing"
	"time"
)

func TestParseMetricQuery(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 10, 15, 30, 0, 0, time.UTC)
	q, err := ParseMetricQuery("signups", "", "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	if q.Interval != IntervalDay || !q.To.Equal(now) || !q.From.Equal(now.Add(-7*24*time.Hour)) {
		t.Errorf("defaults = %+v", q)
	}
	q, err = ParseMetricQuery("notifications", "hour", "2026-03-01T00:00:00+02:00", "", now)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 2, 28, 22, 0, 0, 0, time.UTC); !q.From.Equal(want) || q.From.Location() != time.UTC {
		t.Errorf("from = %v, want %v in UTC", q.From, want)
	}
	if _, err := ParseMetricQuery("signups", "day", "", "2026-01-01T00:00:00Z", now); err != nil {
		t.Errorf("to alone: %v", err)
	}
	good := []struct{ metric, interval, from, to string }{
		{"active_users", "day", "2025-03-10T00:00:00Z", "2026-03-11T00:00:00Z"},   // 366 days
		{"workflow_runs", "hour", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"}, // 31 days
	}
	for _, c := range good {
		if _, err := ParseMetricQuery(c.metric, c.interval, c.from, c.to, now); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	bad := []struct{ metric, interval, from, to string }{
		{"", "day", "", ""},
		{"logins", "day", "", ""},
		{"signups", "week", "", ""},
		{"signups", "day", "yesterday", ""},
		{"signups", "day", "", "2026-03-10"},
		{"signups", "day", "2026-03-10T00:00:00Z", "2026-03-10T00:00:00Z"},
		{"signups", "day", "2026-03-10T00:00:00Z", "2026-03-09T00:00:00Z"},
		{"signups", "day", "2025-03-09T00:00:00Z", "2026-03-10T00:00:01Z"}, // 366 days and a second
		{"signups", "hour", "2026-01-01T00:00:00Z", "2026-02-01T00:00:01Z"},
	}
	for _, c := range bad {
		_, err := ParseMetricQuery(c.metric, c.interval, c.from, c.to, now)
		if ErrorCode(err) != EBADREQUEST {
			t.Errorf("%+v: err = %v, want bad_request", c, err)
		}
	}
	// The default 7 days are fine by hour too.
	if _, err := ParseMetricQuery("signups", "hour", "", "", now); err != nil {
		t.Errorf("7 days by hour: %v", err)
	}
}

func TestMetricBuckets(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		q           MetricQuery
		first, last string
		n           int
	}{
		{MetricQuery{Interval: IntervalDay, From: at("2026-03-01T00:00:00Z"), To: at("2026-03-08T00:00:00Z")}, "2026-03-01T00:00:00Z", "2026-03-07T00:00:00Z", 7},
		{MetricQuery{Interval: IntervalDay, From: at("2026-03-01T15:00:00Z"), To: at("2026-03-08T15:00:00Z")}, "2026-03-01T00:00:00Z", "2026-03-08T00:00:00Z", 8},
		{MetricQuery{Interval: IntervalHour, From: at("2026-03-01T10:30:00Z"), To: at("2026-03-01T12:00:00Z")}, "2026-03-01T10:00:00Z", "2026-03-01T11:00:00Z", 2},
		{MetricQuery{Interval: IntervalHour, From: at("2026-03-01T10:30:00Z"), To: at("2026-03-01T10:31:00Z")}, "2026-03-01T10:00:00Z", "2026-03-01T10:00:00Z", 1},
	}
	for _, c := range cases {
		b := c.q.Buckets()
		if len(b) != c.n || !b[0].T.Equal(at(c.first)) || !b[len(b)-1].T.Equal(at(c.last)) {
			t.Errorf("%+v: %d buckets from %v to %v, want %d from %s to %s", c.q, len(b), b[0].T, b[len(b)-1].T, c.n, c.first, c.last)
		}
		for i, p := range b {
			if p.Value != 0 || i > 0 && p.T.Sub(b[i-1].T) != c.q.Step() {
				t.Errorf("%+v: bucket %d = %+v", c.q, i, p)
			}
		}
	}
}
