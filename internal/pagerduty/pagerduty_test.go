package pagerduty_test

import (
	"errors"
	"net"
	"testing"

	"github.com/perch-dev/perch/internal/pagerduty"
	"github.com/perch-dev/perch/internal/pagerduty/pagerdutyfake"
)

func TestSetIncidentStatus(t *testing.T) {
	t.Parallel()
	fake := pagerdutyfake.Start(t, "u+key_1")
	fake.AddIncident("PT4KHLK", "triggered")
	c, err := pagerduty.New(fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, tt := range []struct {
		key, incident, status string
		want                  int
	}{
		{"u+key_1", "PT4KHLK", pagerduty.StatusAcknowledged, 200},
		{"u+key_1", "PT4KHLK", pagerduty.StatusResolved, 200},
		{"wrong", "PT4KHLK", pagerduty.StatusResolved, 401},
		{"u+key_1", "PNOSUCH", pagerduty.StatusResolved, 404},
	} {
		got, err := c.SetIncidentStatus(ctx, tt.key, "ops@example.com", tt.incident, tt.status)
		if err != nil || got != tt.want {
			t.Errorf("SetIncidentStatus(%s, %s, %s) = %d, %v; want %d", tt.key, tt.incident, tt.status, got, err, tt.want)
		}
	}
	changes := fake.Changes()
	if len(changes) != 2 || changes[0].Status != "acknowledged" || changes[1].Status != "resolved" || changes[1].From != "ops@example.com" {
		t.Errorf("changes %+v", changes)
	}
	if fake.Status("PT4KHLK") != "resolved" {
		t.Errorf("status %q", fake.Status("PT4KHLK"))
	}
	if _, err := c.SetIncidentStatus(ctx, "u+key_1", "ops@example.com", "PT4KHLK", "triggered"); err == nil {
		t.Error("a status Perch does not set was sent")
	}
}

func TestSetIncidentStatusUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	c, err := pagerduty.New("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetIncidentStatus(t.Context(), "k", "ops@example.com", "P1", pagerduty.StatusResolved); !errors.Is(err, pagerduty.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
}

func TestNewRefusesABadURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"ftp://x", "not a url", "https://"} {
		if _, err := pagerduty.New(u); err == nil {
			t.Errorf("New(%q) took it", u)
		}
	}
}
