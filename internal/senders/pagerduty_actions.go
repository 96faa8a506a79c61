package senders

import "github.com/perch-dev/perch"

// Native actions on an incident: a notification of an incident that is not
// resolved offers Resolve, and one of an incident that waits for someone
// (triggered, reopened, escalated, unacknowledged, reassigned, delegated,
// assigned) offers Acknowledge first. The receiver keeps them only for an
// organisation that stored a PagerDuty REST API key (docs/DESIGN.md,
// Notification actions).
var (
	pdAcknowledge = perch.NotificationAction{ID: "acknowledge", Type: perch.ActionHTTP, Label: "Acknowledge", Native: perch.NativePagerDutyAcknowledge}
	pdResolve     = perch.NotificationAction{ID: "resolve", Type: perch.ActionHTTP, Label: "Resolve", Native: perch.NativePagerDutyResolve}
)

// pdOpen says, for an incident event (V3's type less "incident.", or V2's
// event less it), whether the incident is left waiting for someone to act
// (ack) and whether it is left unresolved (resolve). Events that do not
// change or tell the incident's status (notes, priorities, responders)
// offer nothing: the notification cannot say what state the incident is in.
var pdOpen = map[string]struct{ ack, resolve bool }{
	"triggered": {true, true}, "reopened": {true, true}, "escalated": {true, true}, "unacknowledged": {true, true},
	"reassigned": {true, true}, "delegated": {true, true}, "acknowledged": {false, true},
	// V2's names.
	"trigger": {true, true}, "escalate": {true, true}, "unacknowledge": {true, true}, "assign": {true, true},
	"delegate": {true, true}, "acknowledge": {false, true},
}

// pdActions are the native actions of a notification about incident id
// after an event of kind; none without an id to act on.
func pdActions(kind, id string) []perch.NotificationAction {
	open := pdOpen[kind]
	id = perch.OneLine(id)
	if id == "" || len(id) > 64 || !open.resolve {
		return nil
	}
	var out []perch.NotificationAction
	if open.ack {
		a := pdAcknowledge
		a.Ref = id
		out = append(out, a)
	}
	r := pdResolve
	r.Ref = id
	return append(out, r)
}
