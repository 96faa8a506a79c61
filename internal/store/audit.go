package store

import (
	"cmp"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// AppendAudit adds e to the audit log and sets its ID (and At, when zero).
// Entries are never changed: the table refuses updates.
func (s *Store) AppendAudit(ctx context.Context, e *perch.AuditEntry) error {
	if e.At.IsZero() {
		e.At = s.now()
	}
	e.At = perch.Timestamp(e.At)
	changes := []byte("{}")
	if len(e.Changes) > 0 {
		var err error
		if changes, err = json.Marshal(e.Changes); err != nil {
			return err
		}
	}
	var id int64
	err := s.w.QueryRowContext(ctx, s.q(`INSERT INTO audit_log
		(at, action, actor_type, actor_id, actor_email, target_type, target_id, org_id, ip, user_agent, request_id, changes)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		ms(e.At), e.Action, e.Actor.Type, e.Actor.ID, e.Actor.Email, e.Target.Type, e.Target.ID,
		e.OrgID, e.IP, e.UserAgent, e.RequestID, string(changes)).Scan(&id)
	if err != nil {
		return err
	}
	e.ID = strconv.FormatInt(id, 10)
	return nil
}

const auditColumns = `id, at, action, actor_type, actor_id, actor_email, target_type, target_id, org_id, ip, user_agent, request_id, changes`

func scanAudit(row interface{ Scan(...any) error }) (*perch.AuditEntry, error) {
	var e perch.AuditEntry
	var id, at int64
	var changes string
	if err := row.Scan(&id, &at, &e.Action, &e.Actor.Type, &e.Actor.ID, &e.Actor.Email, &e.Target.Type, &e.Target.ID,
		&e.OrgID, &e.IP, &e.UserAgent, &e.RequestID, &changes); err != nil {
		return nil, err
	}
	e.ID, e.At = strconv.FormatInt(id, 10), fromMS(at)
	if changes != "" && changes != "{}" {
		if err := json.Unmarshal([]byte(changes), &e.Changes); err != nil {
			return nil, err
		}
	}
	return &e, nil
}

// auditQuery is the SELECT for f, newest first, after the entry with id
// before (0: from the newest).
func (s *Store) auditQuery(f perch.AuditFilter, before int64, limit int) (string, []any) {
	var where []string
	var args []any
	add := func(cond string, arg any) { where = append(where, cond); args = append(args, arg) }
	if before > 0 {
		add("id < ?", before)
	}
	if !f.From.IsZero() {
		add("at >= ?", ms(f.From))
	}
	if !f.To.IsZero() {
		add("at < ?", ms(f.To))
	}
	if f.Action != "" {
		where = append(where, "substr(action, 1, ?) = ?")
		args = append(args, len(f.Action), f.Action)
	}
	if f.ActorID != "" {
		add("actor_id = ?", f.ActorID)
	}
	if f.OrgID != "" {
		add("org_id = ?", f.OrgID)
	}
	q := `SELECT ` + auditColumns + ` FROM audit_log`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY id DESC LIMIT ?`
	return s.q(q), append(args, limit)
}

// auditCursor reads a cursor of the audit log: the id of the last entry of
// the previous page.
func auditCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(c, 10, 64)
	if err != nil || id <= 0 {
		return 0, perch.Errorf(perch.EBADREQUEST, "The cursor is not one this server answered.")
	}
	return id, nil
}

// AuditLog answers one page of the entries f selects, newest first, and the
// cursor of the next page ("" after the last).
func (s *Store) AuditLog(ctx context.Context, f perch.AuditFilter) ([]*perch.AuditEntry, string, error) {
	before, err := auditCursor(f.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := cmp.Or(f.Limit, perch.DefaultPageLimit)
	entries, err := s.auditPage(ctx, f, before, limit+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(entries) > limit {
		entries = entries[:limit]
		next = entries[limit-1].ID
	}
	return entries, next, nil
}

func (s *Store) auditPage(ctx context.Context, f perch.AuditFilter, before int64, limit int) ([]*perch.AuditEntry, error) {
	q, args := s.auditQuery(f, before, limit)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	entries := []*perch.AuditEntry{}
	for rows.Next() {
		e, err := scanAudit(rows)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return entries, rows.Err()
}

// auditChunk is how many entries EachAudit reads at a time.
const auditChunk = 500

// EachAudit calls fn with every entry f selects (from its cursor on,
// whatever its limit), newest first, reading a chunk at a time: memory stays
// flat however many there are, and no read holds the database for the whole
// export. It stops at fn's first error.
func (s *Store) EachAudit(ctx context.Context, f perch.AuditFilter, fn func(*perch.AuditEntry) error) error {
	before, err := auditCursor(f.Cursor)
	if err != nil {
		return err
	}
	for {
		entries, err := s.auditPage(ctx, f, before, auditChunk)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := fn(e); err != nil {
				return err
			}
		}
		if len(entries) < auditChunk {
			return nil
		}
		before, _ = strconv.ParseInt(entries[len(entries)-1].ID, 10, 64)
	}
}

// PruneAudit deletes the entries older than cutoff, a chunk per statement,
// and says how many went.
func (s *Store) PruneAudit(ctx context.Context, cutoff time.Time) (int64, error) {
	var total int64
	for {
		res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM audit_log WHERE id IN
			(SELECT id FROM audit_log WHERE at < ? ORDER BY id LIMIT ?)`), ms(cutoff), pruneChunk)
		if err != nil {
			return total, err
		}
		n, err := res.RowsAffected()
		total += n
		if err != nil || n < pruneChunk {
			return total, err
		}
	}
}
