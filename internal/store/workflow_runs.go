package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// runStatuses are the statuses a run may have (the table checks them too).
var runStatuses = []string{perch.RunDelivered, perch.RunDropped, perch.RunThrottled, perch.RunDigested, perch.RunFailed}

// runChunk is how many workflow ids one lookup of orgWorkflowIDs names at
// most, far below both databases' limits on parameters per statement.
// (Runs themselves are inserted in the chunk sizes of insertChunks.)
const runChunk = 500

// AddWorkflowRuns stores runs of orgID's workflows, a few statements per
// batch, setting each run's ID and CreatedAt when they are empty. Runs of
// workflows orgID does not have (deleted since the engine loaded them) are
// left out rather than failing the batch. A run with an unknown status is
// EBADREQUEST and stores nothing.
func (s *Store) AddWorkflowRuns(ctx context.Context, orgID string, runs []*perch.WorkflowRun) error {
	if len(runs) == 0 {
		return nil
	}
	now := s.now()
	var ids []string
	for _, r := range runs {
		if r == nil || !slices.Contains(runStatuses, r.Status) {
			return perch.Errorf(perch.EBADREQUEST, "A workflow run needs a status of %s.", strings.Join(runStatuses, ", "))
		}
		if r.CreatedAt.IsZero() {
			r.CreatedAt = now
		}
		if r.ID == "" {
			r.ID = newTimedID(r.CreatedAt)
		}
		r.CreatedAt = perch.Timestamp(r.CreatedAt)
		if !slices.Contains(ids, r.WorkflowID) {
			ids = append(ids, r.WorkflowID)
		}
	}
	// Statements are prepared before the transaction (on SQLite it holds
	// the one writer connection), one per chunk size, and kept: a batch of
	// runs then costs SQLite no parsing, however many there are.
	stmts := make(map[int]*sql.Stmt, len(insertChunks))
	for _, n := range insertChunks {
		st, err := s.prepared(ctx, s.w, insertRunsSQL(n))
		if err != nil {
			return err
		}
		stmts[n] = st
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		known, err := s.orgWorkflowIDs(ctx, tx, orgID, ids)
		if err != nil {
			return err
		}
		keep := slices.DeleteFunc(slices.Clone(runs), func(r *perch.WorkflowRun) bool { return !known[r.WorkflowID] })
		for len(keep) > 0 {
			n := chunkSize(len(keep))
			if err := s.insertRuns(ctx, tx.StmtContext(ctx, stmts[n]), orgID, keep[:n]); err != nil {
				return err
			}
			keep = keep[n:]
		}
		return nil
	})
}

// orgWorkflowIDs answers which of ids are orgID's workflows.
func (s *Store) orgWorkflowIDs(ctx context.Context, tx *sql.Tx, orgID string, ids []string) (map[string]bool, error) {
	known := map[string]bool{}
	for chunk := range slices.Chunk(ids, runChunk) {
		args := []any{orgID}
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := tx.QueryContext(ctx, s.q(`SELECT id FROM workflows WHERE org_id = ? AND id IN (?`+
			strings.Repeat(`, ?`, len(chunk)-1)+`)`), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			known[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return known, nil
}

func (s *Store) insertRuns(ctx context.Context, stmt *sql.Stmt, orgID string, runs []*perch.WorkflowRun) error {
	args := make([]any, 0, 9*len(runs))
	for _, r := range runs {
		steps := r.Steps
		if steps == nil {
			steps = []perch.RunStep{}
		}
		b, err := json.Marshal(steps)
		if err != nil {
			return fmt.Errorf("encode run steps: %w", err)
		}
		args = append(args, r.ID, orgID, r.WorkflowID, r.WorkflowVersion, r.NotificationID, r.Status, string(b), r.DurationUS, ms(r.CreatedAt))
	}
	_, err := stmt.ExecContext(ctx, args...)
	if isUniqueViolation(err) {
		return perch.Errorf(perch.ECONFLICT, "A workflow run with this id is already stored.")
	}
	return err
}

// insertRunsSQL is the statement that inserts rows runs.
func insertRunsSQL(rows int) string {
	row := `(?, ?, ?, ?, ?, ?, ?, ?, ?)`
	return `INSERT INTO workflow_runs
		(id, org_id, workflow_id, workflow_version, notification_id, status, steps, duration_us, created_at)
		VALUES ` + row + strings.Repeat(`, `+row, rows-1)
}

// WorkflowRuns answers one page of the runs of orgID's workflow workflowID,
// newest first, only those with status when it is not "", and the cursor
// of the next page ("" after the last). ENOTFOUND when orgID has no such
// workflow; an unknown status or a cursor this store did not answer is
// EBADREQUEST.
func (s *Store) WorkflowRuns(ctx context.Context, orgID, workflowID, status string, page perch.Page) ([]*perch.WorkflowRun, string, error) {
	where := []string{`r.org_id = ?`, `r.workflow_id = ?`}
	args := []any{orgID, workflowID}
	if status != "" {
		if !slices.Contains(runStatuses, status) {
			return nil, "", perch.Errorf(perch.EBADREQUEST, "status must be one of %s.", strings.Join(runStatuses, ", "))
		}
		where, args = append(where, `r.status = ?`), append(args, status)
	}
	if err := afterCursor(page.Cursor, "r", &where, &args); err != nil {
		return nil, "", err
	}
	if _, err := s.Workflow(ctx, orgID, workflowID); err != nil {
		return nil, "", err
	}
	limit := min(cmp.Or(max(page.Limit, 0), perch.DefaultPageLimit), perch.MaxPageLimit)
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT r.id, r.workflow_id, r.workflow_version, r.notification_id, r.status, r.steps,
		r.duration_us, r.created_at FROM workflow_runs r`+whereClause(where)+` ORDER BY r.created_at DESC, r.id DESC LIMIT ?`),
		append(args, limit+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	out := []*perch.WorkflowRun{}
	for rows.Next() {
		var r perch.WorkflowRun
		var steps string
		var created int64
		if err := rows.Scan(&r.ID, &r.WorkflowID, &r.WorkflowVersion, &r.NotificationID, &r.Status, &steps, &r.DurationUS, &created); err != nil {
			return nil, "", err
		}
		r.Steps = []perch.RunStep{}
		if err := json.Unmarshal([]byte(steps), &r.Steps); err != nil {
			return nil, "", fmt.Errorf("run %s: decode steps: %w", r.ID, err)
		}
		r.CreatedAt = fromMS(created)
		out = append(out, &r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = encodeCursor(last.CreatedAt, last.ID)
	}
	return out, next, nil
}

// AddWorkflowStats adds the engine's counts, per workflow id, to the
// workflows' stats in one transaction. Workflows that no longer exist are
// skipped.
func (s *Store) AddWorkflowStats(ctx context.Context, deltas map[string]perch.WorkflowStats) error {
	if len(deltas) == 0 {
		return nil
	}
	// One order for every caller, so that two instances adding at once on
	// PostgreSQL take the rows' locks in the same order and never deadlock.
	ids := make([]string, 0, len(deltas))
	for id := range deltas {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return s.tx(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			d := deltas[id]
			if d == (perch.WorkflowStats{}) {
				continue
			}
			_, err := tx.ExecContext(ctx, s.q(`UPDATE workflows SET evaluated = evaluated + ?, matched = matched + ?, failed = failed + ?
				WHERE id = ?`), d.Evaluated, d.Matched, d.Failed, id)
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// PruneWorkflowRuns deletes the runs created before before, one statement
// per workflow (each through the index that lists its runs), and says how
// many went. Runs of deleted workflows went with them.
func (s *Store) PruneWorkflowRuns(ctx context.Context, before time.Time) (int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM workflows`)
	if err != nil {
		return 0, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var total int64
	for _, id := range ids {
		res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM workflow_runs WHERE workflow_id = ? AND created_at < ?`), id, ms(before))
		if err != nil {
			return total, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}
