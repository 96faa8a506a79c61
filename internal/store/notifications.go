package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

const notificationColumns = `n.id, n.scope_type, n.scope_id, n.tab, n.title, n.message, n.severity, n.source, n.url, n.created_at, n.priority, n.extras`

// scanNotification reads notificationColumns and then the read state. The
// notification comes with its actions' server-only parts (a sealed request,
// a native reference), which encoding/json leaves out for clients.
func scanNotification(row interface{ Scan(...any) error }) (*perch.Notification, error) {
	var n perch.Notification
	var id, created int64
	var more sql.NullString
	if err := row.Scan(&id, &n.Scope.Type, &n.Scope.ID, &n.Tab, &n.Title, &n.Message, &n.Severity, &n.Source, &n.URL, &created, &n.Priority, &more, &n.Read); err != nil {
		return nil, err
	}
	if err := decodeExtras(&n, more); err != nil {
		return nil, fmt.Errorf("notification %d: extras: %w", id, err)
	}
	n.ID, n.CreatedAt = strconv.FormatInt(id, 10), fromMS(created)
	return &n, nil
}

// visibleTo is the condition for the notifications a user's clients receive:
// addressed to them, their organisation, one of their teams, or everyone
// since the account was made. It takes the user id, the org id, the time the
// user joined (ms) and the user id again.
const visibleTo = `((n.scope_type = 'user' AND n.scope_id = ?) OR (n.scope_type = 'org' AND n.scope_id = ?)
	OR (n.scope_type = 'all' AND n.created_at >= ?)
	OR (n.scope_type = 'team' AND n.scope_id IN (SELECT team_id FROM team_members WHERE user_id = ?)))`

// ParseNotificationID reads a notification id; anything else is EBADREQUEST.
func ParseNotificationID(id string) (int64, error) {
	v, err := strconv.ParseInt(id, 10, 64)
	if err != nil || v < 0 {
		return 0, perch.Errorf(perch.EBADREQUEST, "%q is not a notification id.", id)
	}
	return v, nil
}

// Audience returns who a user is as a recipient: themselves, their
// organisation and their teams.
func (s *Store) Audience(ctx context.Context, u *perch.User) (*perch.Audience, error) {
	teams, err := s.UserTeamIDs(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	return &perch.Audience{UserID: u.ID, OrgID: u.OrgID, TeamIDs: teams, Joined: u.CreatedAt}, nil
}

// Notifications returns what the audience may see, with the user's read
// state: with
// since, the oldest limit after it (oldest first); without, the newest limit
// (still oldest first).
//
// It asks each scope the user hears (themselves, their organisation,
// everyone, each of their teams) on its own, through the (scope_type,
// scope_id, id) index, and merges: one query with OR over the scopes cannot
// use the index, and would read the whole table for a user with little in it.
func (s *Store) Notifications(ctx context.Context, a *perch.Audience, since string, limit int) ([]*perch.Notification, error) {
	var after int64
	if since != "" {
		var err error
		if after, err = ParseNotificationID(since); err != nil {
			return nil, err
		}
	}
	scopes := []perch.Scope{{Type: perch.ScopeUser, ID: a.UserID}, {Type: perch.ScopeOrg, ID: a.OrgID}, {Type: perch.ScopeAll}}
	for _, t := range a.TeamIDs {
		scopes = append(scopes, perch.Scope{Type: perch.ScopeTeam, ID: t})
	}
	order := "ASC"
	if since == "" {
		order = "DESC"
	}
	var ids []int64
	for _, sc := range scopes {
		// Broadcasts are for the accounts there when they were sent.
		var since int64
		if sc.Type == perch.ScopeAll {
			since = ms(a.Joined)
		}
		found, err := s.ids(ctx, `SELECT id FROM notifications WHERE scope_type = ? AND scope_id = ? AND id > ? AND created_at >= ? ORDER BY id `+order+` LIMIT ?`,
			sc.Type, sc.ID, after, since, limit)
		if err != nil {
			return nil, err
		}
		ids = append(ids, found...)
	}
	slices.Sort(ids)
	if since == "" && len(ids) > limit {
		ids = ids[len(ids)-limit:]
	} else if len(ids) > limit {
		ids = ids[:limit]
	}
	list := []*perch.Notification{}
	if len(ids) == 0 {
		return list, nil
	}
	args := []any{a.UserID}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+notificationColumns+`, r.user_id IS NOT NULL FROM notifications n
		LEFT JOIN notification_reads r ON r.notification_id = n.id AND r.user_id = ?
		WHERE n.id IN (?`+strings.Repeat(", ?", len(ids)-1)+`) ORDER BY n.id`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		n, err := scanNotification(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, n)
	}
	return list, rows.Err()
}

// ids runs a query that selects one integer column.
func (s *Store) ids(ctx context.Context, query string, args ...any) ([]int64, error) {
	return column[int64](s.r.QueryContext(ctx, s.q(query), args...))
}

// column reads the one column of rows (as a query returns them, with its
// error) into a slice, and closes them.
func column[T any](rows *sql.Rows, err error) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// MarkRead records that the user read the given notifications (or, with all,
// every one they can see) and returns the ids newly marked; ids the user
// cannot see are passed over.
func (s *Store) MarkRead(ctx context.Context, u *perch.User, ids []string, all bool) ([]string, error) {
	query := `SELECT n.id FROM notifications n WHERE ` + visibleTo + `
		AND NOT EXISTS (SELECT 1 FROM notification_reads r WHERE r.notification_id = n.id AND r.user_id = ?)`
	args := []any{u.ID, u.OrgID, ms(u.CreatedAt), u.ID, u.ID}
	if !all {
		if len(ids) == 0 {
			return []string{}, nil
		}
		nums := make([]any, len(ids))
		for i, id := range ids {
			v, err := ParseNotificationID(id)
			if err != nil {
				return nil, err
			}
			nums[i] = v
		}
		query += ` AND n.id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`
		args = append(args, nums...)
	}
	marked := []string{}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.q(query+` ORDER BY n.id`), args...)
		if err != nil {
			return err
		}
		var found []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			found = append(found, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		now := ms(s.now())
		for _, id := range found {
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO notification_reads (user_id, notification_id, read_at) VALUES (?, ?, ?)
				ON CONFLICT (user_id, notification_id) DO NOTHING`), u.ID, id, now); err != nil {
				return err
			}
			marked = append(marked, strconv.FormatInt(id, 10))
		}
		return nil
	})
	return marked, err
}

// settingPrunedThrough is the settings key of the highest notification id
// that retention has deleted.
const settingPrunedThrough = "notifications.pruned_through"

// pruneChunk is how many notifications one pruning transaction deletes at
// most: a long backlog is deleted in many short transactions, so the ingest
// writer, which shares SQLite's single write lock, never waits long.
const pruneChunk = 2000

// PruneNotifications deletes notifications created before cutoff and
// remembers the highest id deleted, so that a replay from an older id can
// report the gap. It returns how many it deleted.
//
// It walks the table in id order and stops at the first notification young
// enough to keep: ids grow with creation time, so this reads only what it
// deletes, with no index on created_at for every insert to maintain. A
// notification stamped earlier than one before it (the clock stepped back)
// waits for the next pass.
func (s *Store) PruneNotifications(ctx context.Context, cutoffMS int64) (int64, error) {
	var total int64
	for {
		n, err := s.pruneNotificationsChunk(ctx, cutoffMS)
		total += n
		if err != nil || n < pruneChunk {
			return total, err
		}
	}
}

func (s *Store) pruneNotificationsChunk(ctx context.Context, cutoffMS int64) (int64, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var through int64 // the last id to delete; 0 when none is old enough
		rows, err := tx.QueryContext(ctx, s.q(`SELECT id, created_at FROM notifications ORDER BY id LIMIT ?`), pruneChunk)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id, created int64
			if err := rows.Scan(&id, &created); err != nil {
				rows.Close()
				return err
			}
			if created >= cutoffMS {
				break
			}
			through = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if through == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM notification_payloads WHERE notification_id <= ?`), through); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM notifications WHERE id <= ?`), through)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`), settingPrunedThrough, strconv.FormatInt(through, 10))
		return err
	})
	return n, err
}

// ReplayStart says where a replay that resumes after the notification id
// since begins, and whether it has a gap. Notifications after since may have
// been pruned before the client saw them: gap. An id newer than any this
// server has given (another server's, or from before a database was
// restored) would hide every notification up to it: the replay starts from
// the oldest kept instead, also with a gap. Errors: EBADREQUEST for a
// malformed id.
func (s *Store) ReplayStart(ctx context.Context, since string) (after int64, gap bool, err error) {
	if after, err = ParseNotificationID(since); err != nil {
		return 0, false, err
	}
	var newest int64
	var through sql.NullString
	err = s.r.QueryRowContext(ctx, s.q(`SELECT COALESCE((SELECT MAX(id) FROM notifications), 0),
		(SELECT value FROM settings WHERE key = ?)`), settingPrunedThrough).Scan(&newest, &through)
	if err != nil {
		return 0, false, err
	}
	pruned, _ := strconv.ParseInt(through.String, 10, 64)
	if after > max(newest, pruned) {
		return 0, true, nil
	}
	return after, after < pruned, nil
}

// NotificationFor returns the notification with the given id when the
// audience may see it (addressed to the user, their organisation, one of
// their teams, or everyone since they joined), with the user's read state
// and its actions' server-only parts; perch.ENOTFOUND otherwise, whether
// it does not exist or is someone else's.
func (s *Store) NotificationFor(ctx context.Context, a *perch.Audience, id string) (*perch.Notification, error) {
	num, err := ParseNotificationID(id)
	if err != nil {
		return nil, perch.Errorf(perch.ENOTFOUND, "No notification %q.", id)
	}
	n, err := scanNotification(s.r.QueryRowContext(ctx, s.q(`SELECT `+notificationColumns+`, EXISTS (SELECT 1 FROM notification_reads r WHERE r.notification_id = n.id AND r.user_id = ?)
		FROM notifications n WHERE n.id = ?`), a.UserID, num))
	if errors.Is(err, sql.ErrNoRows) || err == nil && !sees(a, n) {
		return nil, perch.Errorf(perch.ENOTFOUND, "No notification %q.", id)
	}
	return n, err
}

// sees reports whether the audience may see n: its scope reaches them, and
// a broadcast is from after they joined.
func sees(a *perch.Audience, n *perch.Notification) bool {
	return a.Includes(n.Scope) && (n.Scope.Type != perch.ScopeAll || !n.CreatedAt.Before(a.Joined.Truncate(time.Millisecond)))
}
