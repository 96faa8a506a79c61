package desktop

import (
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
)

func TestUrgencyOfPriority(t *testing.T) {
	t.Parallel()
	tests := []struct {
		priority int
		severity string
		want     Urgency
	}{
		{perch.PriorityMin, perch.SeverityError, Low},
		{perch.PriorityLow, perch.SeverityError, Low},
		{perch.PriorityDefault, perch.SeverityError, Normal},
		{perch.PriorityHigh, perch.SeverityInfo, Critical},
		{perch.PriorityUrgent, perch.SeverityInfo, Critical},
		// A server from before priorities: the severity.
		{0, perch.SeverityError, Critical},
		{0, perch.SeverityInfo, Low},
	}
	for _, tt := range tests {
		if got := UrgencyOfPriority(tt.priority, tt.severity); got != tt.want {
			t.Errorf("UrgencyOfPriority(%d, %s) = %d, want %d", tt.priority, tt.severity, got, tt.want)
		}
	}
}

func TestButtonsWhereTheServerDrawsActions(t *testing.T) {
	t.Parallel()
	buttons := []Button{{Key: "a1", Label: "Runbook"}, {Key: "acknowledge", Label: "Acknowledge"}, {Key: "default", Label: "not a button"}}
	tests := []struct {
		name string
		caps []string
		want string
	}{
		{"with actions", []string{"body", "actions"}, "default,Open,a1,Runbook,acknowledge,Acknowledge"},
		{"without", []string{"body"}, "default,Open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			addr := mustBus(t)
			srv := mustServer(t, addr, tt.caps...)
			n := mustNotifier(t, addr)
			if _, err := n.Notify(t.Context(), Message{Summary: "API down", Clickable: true, Buttons: buttons}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(srv.next1(t).actions, ","); got != tt.want {
				t.Errorf("actions %q, want %q", got, tt.want)
			}
		})
	}
}

func TestButtonClickIsReported(t *testing.T) {
	t.Parallel()
	addr := mustBus(t)
	srv := mustServer(t, addr, "actions")
	n := mustNotifier(t, addr)
	id, err := n.Notify(t.Context(), Message{Summary: "API down", Buttons: []Button{{Key: "acknowledge", Label: "Acknowledge"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv.next1(t)
	if err := srv.conn.Emit(path, service+".ActionInvoked", id, "acknowledge"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-n.Invoked():
		if got != (Invocation{ID: id, Key: "acknowledge"}) {
			t.Errorf("invoked %+v", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the button's click was not reported")
	}
	select {
	case id := <-n.Activated():
		t.Errorf("a button's click reported as a click on notification %d", id)
	default:
	}
}
