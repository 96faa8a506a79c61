package perch

import (
	"testing"
	"time"
)

func TestDeliveryTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name      string
		at        time.Time
		delay     time.Duration
		due       time.Time
		scheduled bool
		fields    []string
	}{
		{name: "neither"},
		{name: "a delay", delay: 30 * time.Minute, due: now.Add(30 * time.Minute), scheduled: true},
		{name: "the longest delay", delay: MaxDeliveryDelay, due: now.Add(MaxDeliveryDelay), scheduled: true},
		{name: "a time ahead", at: now.Add(time.Hour).In(time.FixedZone("CET", 3600)), due: now.Add(time.Hour), scheduled: true},
		{name: "the furthest time", at: now.Add(MaxDeliveryDelay), due: now.Add(MaxDeliveryDelay), scheduled: true},
		{name: "now: at once", at: now},
		{name: "past: at once", at: now.Add(-time.Hour)},
		{name: "too far", at: now.Add(MaxDeliveryDelay + time.Millisecond), fields: []string{"deliver_at"}},
		{name: "too long", delay: MaxDeliveryDelay + time.Second, fields: []string{"delay"}},
		{name: "negative", delay: -time.Second, fields: []string{"delay"}},
		{name: "both", at: now.Add(time.Hour), delay: time.Hour, fields: []string{"deliver_at", "delay"}},
	} {
		due, scheduled, problems := DeliveryTime(tt.at, tt.delay, now)
		if !due.Equal(tt.due) || scheduled != tt.scheduled || len(problems) != len(tt.fields) {
			t.Errorf("%s: %v, %v, %v; want %v, %v, fields %v", tt.name, due, scheduled, problems, tt.due, tt.scheduled, tt.fields)
			continue
		}
		for _, f := range tt.fields {
			if problems[f] == "" {
				t.Errorf("%s: no problem with %s in %v", tt.name, f, problems)
			}
		}
		if scheduled && due.Location() != time.UTC {
			t.Errorf("%s: due %v is not in UTC", tt.name, due)
		}
	}
}
