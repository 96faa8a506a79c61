package store

import (
	"database/sql"
	"encoding/json"

	"github.com/perch-dev/perch"
)

// extras is how the notifications table keeps what most notifications do
// not have (the extras column, NULL when there is none of it): tags, icon,
// Markdown, actions with their server-only parts, and the time a scheduled
// notification was due. One JSON column rather than five keeps a plain
// notification's insert to the columns it always had, a priority and a
// NULL.
type extras struct {
	Tags      []string       `json:"tags,omitempty"`
	Icon      string         `json:"icon,omitempty"`
	Markdown  bool           `json:"markdown,omitempty"`
	Actions   []storedAction `json:"actions,omitempty"`
	DeliverAt int64          `json:"deliver_at,omitempty"` // ms since the epoch
}

// storedAction is a perch.NotificationAction as the store keeps it: with
// the parts clients never see.
type storedAction struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Label  string `json:"label"`
	URL    string `json:"url,omitempty"`
	Sealed string `json:"sealed,omitempty"`
	Native string `json:"native,omitempty"`
	Ref    string `json:"ref,omitempty"`
}

// hasExtras reports whether n has anything the extras column keeps.
func hasExtras(n *perch.Notification) bool {
	return len(n.Tags) > 0 || n.Icon != "" || n.Markdown || len(n.Actions) > 0 || n.DeliverAt != nil
}

// encodeExtras is n's extras column: nil (NULL) when it has none, else
// the JSON text.
func encodeExtras(n *perch.Notification) any {
	if !hasExtras(n) {
		return nil
	}
	e := extras{Tags: n.Tags, Icon: n.Icon, Markdown: n.Markdown}
	for _, a := range n.Actions {
		e.Actions = append(e.Actions, storedAction{ID: a.ID, Type: a.Type, Label: a.Label, URL: a.URL, Sealed: a.Sealed, Native: a.Native, Ref: a.Ref})
	}
	if n.DeliverAt != nil {
		e.DeliverAt = ms(*n.DeliverAt)
	}
	b, _ := json.Marshal(e) // strings, bools and numbers: it cannot fail
	return string(b)
}

// decodeExtras fills n from its extras column.
func decodeExtras(n *perch.Notification, col sql.NullString) error {
	if !col.Valid {
		return nil
	}
	var e extras
	if err := json.Unmarshal([]byte(col.String), &e); err != nil {
		return err
	}
	n.Tags, n.Icon, n.Markdown = e.Tags, e.Icon, e.Markdown
	if len(e.Actions) > 0 {
		n.Actions = make([]perch.NotificationAction, len(e.Actions))
		for i, a := range e.Actions {
			n.Actions[i] = perch.NotificationAction{ID: a.ID, Type: a.Type, Label: a.Label, URL: a.URL, Sealed: a.Sealed, Native: a.Native, Ref: a.Ref}
		}
	}
	if e.DeliverAt != 0 {
		t := fromMS(e.DeliverAt)
		n.DeliverAt = &t
	}
	return nil
}

// priority is n's priority column: its own, or the one its severity
// implies when it has none (the last guard: every notification has one).
func priority(n *perch.Notification) int {
	if n.Priority >= perch.PriorityMin && n.Priority <= perch.PriorityUrgent {
		return n.Priority
	}
	return perch.DefaultPriority(n.Severity)
}
