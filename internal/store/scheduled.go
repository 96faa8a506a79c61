package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// NewScheduled is a notification to deliver later: what the receiver made of
// a delivery that asked for deliver_at or delay, with the webhook token that
// sent it (and that token's owner and organisation), the jobs its
// workflows queued, and the delivery's dedupe key.
type NewScheduled struct {
	TokenID, UserID, OrgID string
	DeliverAt              time.Time
	// Notification is the notification to make, scope included; its ID,
	// CreatedAt and DeliverAt are set when it is delivered. Its actions
	// keep their server-only parts (Sealed, Native, Ref).
	Notification perch.Notification
	DedupeKey    string            // "": none
	Jobs         []NotificationJob // queued with the notification when it is delivered
}

// ScheduledReceipt is the outcome of scheduling one NewScheduled: its id
// and time, and whether it was scheduled before (a redelivery: the first
// delivery's id and time).
type ScheduledReceipt struct {
	ID        string
	DeliverAt time.Time
	Duplicate bool
}

// Scheduled is a claimed scheduled notification (DueScheduled), to deliver.
type Scheduled struct {
	ID, TokenID, UserID, OrgID string
	DeliverAt, CreatedAt       time.Time
	Notification               perch.Notification
	Jobs                       []ScheduledJob
	// Usable is false when the token that sent it may no longer send (its
	// owner was disabled, or lost the role or team the token's scope
	// needs): it is dropped, not delivered.
	Usable bool
}

// ScheduledJob is a workflow job kept with a scheduled notification: a
// NotificationJob whose payload is kept with an empty "notification",
// filled in with the notification as stored once it is delivered.
type ScheduledJob struct {
	OrgID      string          `json:"org_id"`
	Kind       string          `json:"kind"`
	WorkflowID string          `json:"workflow_id"`
	RunID      string          `json:"run_id"`
	Step       int             `json:"step"`
	Payload    json.RawMessage `json:"payload"`
}

// scheduledBody is the JSON a scheduled row keeps: the notification with
// what perch.Notification's own JSON leaves out (the actions' server-only
// parts, as the notifications table keeps them: storedAction), and the
// jobs.
type scheduledBody struct {
	Tab      string         `json:"tab"`
	Title    string         `json:"title"`
	Message  string         `json:"message"`
	Severity string         `json:"severity"`
	Source   string         `json:"source"`
	URL      string         `json:"url,omitempty"`
	Scope    perch.Scope    `json:"scope"`
	Priority int            `json:"priority,omitempty"`
	Tags     []string       `json:"tags,omitempty"`
	Icon     string         `json:"icon,omitempty"`
	Markdown bool           `json:"markdown,omitempty"`
	Actions  []storedAction `json:"actions,omitempty"`
	Jobs     []ScheduledJob `json:"jobs,omitempty"`
}

func encodeScheduled(n perch.Notification, jobs []NotificationJob) (string, error) {
	b := scheduledBody{Tab: n.Tab, Title: n.Title, Message: n.Message, Severity: n.Severity, Source: n.Source, URL: n.URL,
		Scope: n.Scope, Priority: n.Priority, Tags: n.Tags, Icon: n.Icon, Markdown: n.Markdown}
	for _, a := range n.Actions {
		if a.Request != nil && a.Sealed == "" {
			// The receiver seals every http action's request before it is
			// kept; a plain one is never written to the database.
			return "", errors.New("store: an http action's request must be sealed before it is scheduled")
		}
		b.Actions = append(b.Actions, storedAction{ID: a.ID, Type: a.Type, Label: a.Label, URL: a.URL, Sealed: a.Sealed, Native: a.Native, Ref: a.Ref})
	}
	for _, j := range jobs {
		payload, err := j.Payload(perch.Notification{})
		if err != nil {
			return "", err
		}
		b.Jobs = append(b.Jobs, ScheduledJob{OrgID: j.OrgID, Kind: j.Kind, WorkflowID: j.WorkflowID, RunID: j.RunID, Step: j.Step, Payload: payload})
	}
	out, err := json.Marshal(b)
	return string(out), err
}

func decodeScheduled(body string) (perch.Notification, []ScheduledJob, error) {
	var b scheduledBody
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		return perch.Notification{}, nil, err
	}
	n := perch.Notification{Tab: b.Tab, Title: b.Title, Message: b.Message, Severity: b.Severity, Source: b.Source, URL: b.URL,
		Scope: b.Scope, Priority: b.Priority, Tags: b.Tags, Icon: b.Icon, Markdown: b.Markdown}
	for _, a := range b.Actions {
		n.Actions = append(n.Actions, perch.NotificationAction{ID: a.ID, Type: a.Type, Label: a.Label, URL: a.URL, Sealed: a.Sealed, Native: a.Native, Ref: a.Ref})
	}
	return n, b.Jobs, nil
}

// Delivery is the notification sc makes when it is due, to write through
// ingest: its dedupe key "scheduled|<id>" makes a second write (another
// worker's, or this one's after a crash) a no-op, its DeliverAt is the time
// it was due, and its jobs are queued with it.
func (sc *Scheduled) Delivery() NewNotification {
	n := sc.Notification
	due := sc.DeliverAt
	n.DeliverAt = &due
	nn := NewNotification{Notification: n, DedupeKey: "scheduled|" + sc.ID}
	for _, j := range sc.Jobs {
		template := j.Payload
		nn.Jobs = append(nn.Jobs, NotificationJob{OrgID: j.OrgID, Kind: j.Kind, WorkflowID: j.WorkflowID, RunID: j.RunID, Step: j.Step,
			Payload: func(n perch.Notification) (json.RawMessage, error) { return withNotification(template, n) }})
	}
	return nn
}

// withNotification is a job's payload template with its "notification"
// member set to n.
func withNotification(template json.RawMessage, n perch.Notification) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(template, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	enc, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	m["notification"] = enc
	return json.Marshal(m)
}

// scheduledUsable is true for a scheduled row whose webhook token may
// still send: the rule of WebhookTokenByHash.
const scheduledUsable = `EXISTS (SELECT 1 FROM webhook_tokens w JOIN users u ON u.id = w.user_id
	WHERE w.id = scheduled_notifications.token_id AND ` + webhookTokenUsable + `)`

// ScheduleNotifications keeps batch to deliver later, in one transaction,
// and answers one receipt per entry. An entry whose dedupe key was
// scheduled before (pending, delivered or cancelled) is not kept again:
// its receipt is the first one's, marked Duplicate. A token with
// perch.MaxPendingScheduled waiting already is ECONFLICT, and nothing is
// kept; a token, user or organisation that does not exist is ENOTFOUND.
func (s *Store) ScheduleNotifications(ctx context.Context, batch []NewScheduled) ([]ScheduledReceipt, error) {
	now := s.now()
	out := make([]ScheduledReceipt, len(batch))
	bodies := make([]string, len(batch))
	for i, sc := range batch {
		body, err := encodeScheduled(sc.Notification, sc.Jobs)
		if err != nil {
			return nil, err
		}
		bodies[i] = body
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		pending := map[string]int{}
		for i, sc := range batch {
			if _, ok := pending[sc.TokenID]; !ok {
				var n int
				if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM scheduled_notifications WHERE token_id = ? AND done_at IS NULL`),
					sc.TokenID).Scan(&n); err != nil {
					return err
				}
				pending[sc.TokenID] = n
			}
			var key any
			if sc.DedupeKey != "" {
				key = stateKey(sc.DedupeKey)
			}
			id, at := newID(), perch.Timestamp(sc.DeliverAt)
			res, err := tx.ExecContext(ctx, s.q(`INSERT INTO scheduled_notifications (id, token_id, user_id, org_id, deliver_at, body, dedupe_key, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING`),
				id, sc.TokenID, sc.UserID, sc.OrgID, ms(at), bodies[i], key, ms(now))
			if err != nil {
				if isForeignKeyViolation(err) {
					return perch.Errorf(perch.ENOTFOUND, "Webhook token not found.")
				}
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				var due int64
				if err := tx.QueryRowContext(ctx, s.q(`SELECT id, deliver_at FROM scheduled_notifications WHERE dedupe_key = ?`), key).Scan(&id, &due); err != nil {
					return err
				}
				out[i] = ScheduledReceipt{ID: id, DeliverAt: fromMS(due), Duplicate: true}
				continue
			}
			if pending[sc.TokenID]++; pending[sc.TokenID] > perch.MaxPendingScheduled {
				return perch.Errorf(perch.ECONFLICT, "This webhook token has %d scheduled notifications waiting, the most it may have; cancel some, or send again once some are delivered.", perch.MaxPendingScheduled)
			}
			out[i] = ScheduledReceipt{ID: id, DeliverAt: at}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DueScheduled claims up to limit scheduled notifications due at now (the
// earliest first) for lease: another claimer skips them until the lease
// ends, so one whose worker stopped before DoneScheduled is claimed again
// then (and its second write is a no-op: see Scheduled.Delivery). On
// PostgreSQL the claim takes rows with FOR UPDATE SKIP LOCKED, so that
// instances claiming at once get different ones; on SQLite the one writer
// runs the single UPDATE alone.
func (s *Store) DueScheduled(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]*Scheduled, error) {
	if lease < time.Millisecond {
		return nil, perch.Errorf(perch.EBADREQUEST, "A lease must be at least 1ms, not %s.", lease)
	}
	if limit < 1 {
		return []*Scheduled{}, nil
	}
	skipLocked := ""
	if s.dialect == Postgres {
		skipLocked = ` FOR UPDATE SKIP LOCKED`
	}
	at := ms(now)
	rows, err := s.w.QueryContext(ctx, s.q(`UPDATE scheduled_notifications SET lease_until = ? WHERE id IN (
		SELECT id FROM scheduled_notifications WHERE done_at IS NULL AND deliver_at <= ? AND lease_until <= ?
		ORDER BY deliver_at, id LIMIT ?`+skipLocked+`)
		RETURNING id, token_id, user_id, org_id, deliver_at, created_at, body, `+scheduledUsable), ms(now.Add(lease)), at, at, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []*Scheduled{}
	for rows.Next() {
		var sc Scheduled
		var due, created int64
		var body string
		if err := rows.Scan(&sc.ID, &sc.TokenID, &sc.UserID, &sc.OrgID, &due, &created, &body, &sc.Usable); err != nil {
			return nil, err
		}
		sc.DeliverAt, sc.CreatedAt = fromMS(due), fromMS(created)
		if sc.Notification, sc.Jobs, err = decodeScheduled(body); err != nil {
			return nil, err
		}
		list = append(list, &sc)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b *Scheduled) int {
		return cmp.Or(a.DeliverAt.Compare(b.DeliverAt), strings.Compare(a.ID, b.ID))
	})
	return list, nil
}

// DoneScheduled records that the scheduled notification id was delivered
// as notification notificationID, or, with notificationID "", that it was
// dropped undelivered (its token may no longer send). It is then no longer
// pending, claimed, listed or cancellable. A second call changes nothing.
func (s *Store) DoneScheduled(ctx context.Context, id, notificationID string) error {
	_, err := s.w.ExecContext(ctx, s.q(`UPDATE scheduled_notifications SET done_at = ?, notification_id = ?, cancelled = ?, lease_until = 0
		WHERE id = ? AND done_at IS NULL`), ms(s.now()), notificationID, notificationID == "", id)
	return err
}

const scheduledColumns = `id, token_id, deliver_at, created_at, body`

func scanScheduledNotification(row interface{ Scan(...any) error }) (*perch.ScheduledNotification, error) {
	var out perch.ScheduledNotification
	var due, created int64
	var body string
	if err := row.Scan(&out.ID, &out.WebhookTokenID, &due, &created, &body); err != nil {
		return nil, err
	}
	n, _, err := decodeScheduled(body)
	if err != nil {
		return nil, err
	}
	out.DeliverAt, out.CreatedAt = fromMS(due), fromMS(created)
	out.Tab, out.Title, out.Message, out.Severity, out.Source, out.Scope = n.Tab, n.Title, n.Message, n.Severity, n.Source, n.Scope
	out.Priority = n.Priority
	if out.Priority == 0 {
		out.Priority = perch.DefaultPriority(n.Severity)
	}
	return &out, nil
}

// MaxScheduledList is the most scheduled notifications one listing answers.
const MaxScheduledList = 500

// ScheduledNotifications lists the pending scheduled notifications of the
// webhook tokens userID owns, soonest first (at most MaxScheduledList).
// One that is due but not yet delivered is still listed.
func (s *Store) ScheduledNotifications(ctx context.Context, userID string) ([]*perch.ScheduledNotification, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+scheduledColumns+` FROM scheduled_notifications
		WHERE user_id = ? AND done_at IS NULL ORDER BY deliver_at, id LIMIT ?`), userID, MaxScheduledList)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []*perch.ScheduledNotification{}
	for rows.Next() {
		sc, err := scanScheduledNotification(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, sc)
	}
	return list, rows.Err()
}

// CancelScheduled cancels the pending scheduled notification id of a
// webhook token userID owns, and answers it as it was: it is never
// delivered. ENOTFOUND when there is none (another user's, delivered,
// cancelled already, or unknown); ECONFLICT while a worker is delivering
// it (claimed, its lease not ended at now).
func (s *Store) CancelScheduled(ctx context.Context, userID, id string) (*perch.ScheduledNotification, error) {
	now := s.now()
	sc, err := scanScheduledNotification(s.w.QueryRowContext(ctx, s.q(`UPDATE scheduled_notifications SET done_at = ?, cancelled = ?
		WHERE id = ? AND user_id = ? AND done_at IS NULL AND lease_until <= ?
		RETURNING `+scheduledColumns), ms(now), true, id, userID, ms(now)))
	if !errors.Is(err, sql.ErrNoRows) {
		return sc, err
	}
	var lease int64
	err = s.w.QueryRowContext(ctx, s.q(`SELECT lease_until FROM scheduled_notifications WHERE id = ? AND user_id = ? AND done_at IS NULL`),
		id, userID).Scan(&lease)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, perch.Errorf(perch.ENOTFOUND, "Scheduled notification not found.")
	case err != nil:
		return nil, err
	}
	return nil, perch.Errorf(perch.ECONFLICT, "The scheduled notification is being delivered now; it can no longer be cancelled.")
}

// NextScheduled answers when the earliest pending scheduled notification
// that no worker holds at now is due (ok false when there is none): the
// worker wakes then.
func (s *Store) NextScheduled(ctx context.Context, now time.Time) (due time.Time, ok bool, err error) {
	var next sql.NullInt64
	err = s.r.QueryRowContext(ctx, s.q(`SELECT MIN(deliver_at) FROM scheduled_notifications WHERE done_at IS NULL AND lease_until <= ?`),
		ms(now)).Scan(&next)
	if err != nil || !next.Valid {
		return time.Time{}, false, err
	}
	return fromMS(next.Int64), true, nil
}

// PruneScheduled removes the scheduled notifications delivered, dropped or
// cancelled before before (their dedupe keys go with them), and answers
// how many it removed.
func (s *Store) PruneScheduled(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM scheduled_notifications WHERE done_at IS NOT NULL AND done_at < ?`), ms(before))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
