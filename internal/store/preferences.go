package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/perch-dev/perch"
)

// Preferences returns the user's preferences and their version: the
// defaults and version 0 until they store some. A snooze that has ended
// is answered as none.
func (s *Store) Preferences(ctx context.Context, userID string) (*perch.Preferences, int64, error) {
	var body string
	var version int64
	err := s.r.QueryRowContext(ctx, s.q(`SELECT body, version FROM user_preferences WHERE user_id = ?`), userID).Scan(&body, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return perch.DefaultPreferences(), 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	p, err := decodePreferences(body)
	if err != nil {
		return nil, 0, fmt.Errorf("store: preferences of user %s: %w", userID, err)
	}
	if p.SnoozeUntil != nil && !p.SnoozeUntil.After(s.now()) {
		p.SnoozeUntil = nil
	}
	return p, version, nil
}

func decodePreferences(body string) (*perch.Preferences, error) {
	p := perch.DefaultPreferences()
	if err := json.Unmarshal([]byte(body), p); err != nil {
		return nil, err
	}
	if p.Muted == nil {
		p.Muted = []perch.Mute{}
	}
	return p, nil
}

// SetPreferences stores the user's preferences p (validated already) and
// returns their new version. The unread mail's place is kept across
// changes; turned on, it starts from now: what arrived before is never
// mailed. It is due at once, so that a shorter wait holds from the next
// tick. ENOTFOUND when the user does not exist.
func (s *Store) SetPreferences(ctx context.Context, userID string, p *perch.Preferences) (int64, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return 0, err
	}
	now := ms(s.now())
	var after, minp, due sql.NullInt64
	if e := p.EmailUnread; e != nil {
		after = sql.NullInt64{Int64: int64(e.AfterMinutes), Valid: true}
		minp = sql.NullInt64{Int64: int64(e.MinPriority), Valid: true}
		due = sql.NullInt64{Int64: now, Valid: true}
	}
	var version int64
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var exists bool
		if err := tx.QueryRowContext(ctx, s.q(`SELECT EXISTS (SELECT 1 FROM users WHERE id = ?)`), userID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return perch.Errorf(perch.ENOTFOUND, "User not found.")
		}
		// unread_through moves to now when the mail is turned on (it was
		// off: no due time), and stays where it is otherwise.
		return tx.QueryRowContext(ctx, s.q(`INSERT INTO user_preferences
			(user_id, body, version, updated_at, unread_after_minutes, unread_min_priority, unread_through, unread_due_at)
			VALUES (?, ?, 1, ?, ?, ?, ?, ?)
			ON CONFLICT (user_id) DO UPDATE SET body = excluded.body, version = user_preferences.version + 1,
				updated_at = excluded.updated_at, unread_after_minutes = excluded.unread_after_minutes,
				unread_min_priority = excluded.unread_min_priority,
				unread_through = CASE WHEN user_preferences.unread_due_at IS NULL THEN excluded.unread_through
					ELSE user_preferences.unread_through END,
				unread_due_at = excluded.unread_due_at
			RETURNING version`), userID, string(body), now, after, minp, now, due).Scan(&version)
	})
	return version, err
}

// UnreadMail is one user's mail of unread notifications, as DueUnreadMail
// claimed it: Notifications (newest first, at most the limit asked for)
// are those the user can see, at or above the priority, unread, that
// arrived after the last mail covered (Since) and at least the wait ago
// (up to Through). Found is how many there are in all.
type UnreadMail struct {
	User          *perch.User
	Version       int64 // of the preferences claimed
	Settings      perch.EmailUnread
	Since         time.Time
	Through       time.Time
	Notifications []*perch.Notification
	Found         int
}

// UnreadMailLease is how long a claimed user's mail may take before another
// worker claims it again.
const UnreadMailLease = 5 * time.Minute

// DueUnreadMail claims up to limit users whose unread mail is due at now
// (on this worker alone: another finds them claimed for UnreadMailLease)
// and returns each one's mail, with at most perMail notifications; record
// the outcome of each with UnreadMailed. Disabled accounts and unverified
// addresses are passed over (and looked at again later).
func (s *Store) DueUnreadMail(ctx context.Context, now time.Time, limit, perMail int) ([]*UnreadMail, error) {
	type due struct {
		userID                  string
		dueAt, through, version int64
		settings                perch.EmailUnread
	}
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT user_id, unread_due_at, unread_through, version, unread_after_minutes, unread_min_priority
		FROM user_preferences WHERE unread_due_at IS NOT NULL AND unread_due_at <= ? ORDER BY unread_due_at LIMIT ?`), ms(now), limit)
	if err != nil {
		return nil, err
	}
	var found []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.userID, &d.dueAt, &d.through, &d.version, &d.settings.AfterMinutes, &d.settings.MinPriority); err != nil {
			rows.Close()
			return nil, err
		}
		found = append(found, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []*UnreadMail
	for _, d := range found {
		res, err := s.w.ExecContext(ctx, s.q(`UPDATE user_preferences SET unread_due_at = ? WHERE user_id = ? AND unread_due_at = ?`),
			ms(now.Add(UnreadMailLease)), d.userID, d.dueAt)
		if err != nil {
			return out, err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			continue // another worker has it
		}
		u, err := s.User(ctx, d.userID)
		if err != nil {
			return out, err
		}
		m := &UnreadMail{User: u, Version: d.version, Settings: d.settings, Since: fromMS(d.through),
			Through: perch.Timestamp(now.Add(-time.Duration(d.settings.AfterMinutes) * time.Minute))}
		if !m.Through.After(m.Since) || u.Disabled || !u.EmailVerified {
			out = append(out, m) // nothing to mail now; UnreadMailed sets the next look
			continue
		}
		if m.Notifications, m.Found, err = s.unreadFor(ctx, u, d.settings.MinPriority, m.Since, m.Through, perMail); err != nil {
			return out, err
		}
		out = append(out, m)
	}
	return out, nil
}

// unreadFor returns the newest limit of the notifications u can see, at or
// above priority minp, that arrived in (since, through] and that u has not
// read, and how many there are in all.
func (s *Store) unreadFor(ctx context.Context, u *perch.User, minp int, since, through time.Time, limit int) ([]*perch.Notification, int, error) {
	where := ` FROM notifications n WHERE ` + visibleTo + ` AND n.created_at > ? AND n.created_at <= ? AND n.priority >= ?
		AND NOT EXISTS (SELECT 1 FROM notification_reads r WHERE r.notification_id = n.id AND r.user_id = ?)`
	args := []any{u.ID, u.OrgID, ms(u.CreatedAt), u.ID, ms(since), ms(through), minp, u.ID}
	var total int
	if err := s.r.QueryRowContext(ctx, s.q(`SELECT COUNT(*)`+where), args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	if total == 0 {
		return nil, 0, nil
	}
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+notificationColumns+`, FALSE`+where+` ORDER BY n.id DESC LIMIT ?`), append(args, limit)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var list []*perch.Notification
	for rows.Next() {
		n, err := scanNotification(rows)
		if err != nil {
			return nil, 0, err
		}
		list = append(list, n)
	}
	return list, total, rows.Err()
}

// UnreadMailed records the outcome of a user's mail that DueUnreadMail
// claimed: with covered, the notifications up to m.Through are not mailed
// again; the mail is due again at next, unless the user changed their
// preferences since the claim (their change made it due, or turned it off).
func (s *Store) UnreadMailed(ctx context.Context, m *UnreadMail, covered bool, next time.Time) error {
	through := m.Since
	if covered {
		through = m.Through
	}
	_, err := s.w.ExecContext(ctx, s.q(`UPDATE user_preferences SET
		unread_through = CASE WHEN unread_through < ? THEN ? ELSE unread_through END,
		unread_due_at = CASE WHEN version = ? THEN ? ELSE unread_due_at END
		WHERE user_id = ?`),
		ms(through), ms(through), m.Version, ms(next), m.User.ID)
	return err
}
