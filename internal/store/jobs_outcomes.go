package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// What became of the workflows' jobs: the worker records every outcome in
// the job's row (CompleteJob, RetryJob, RefuseJob), the runs page reads
// the jobs of its runs (RunJobs), and owners list and retry the ones that
// failed (FailedDeliveries, RequeueJob).

// Delivery is j as the API shows it: its state follows from its row
// (delivered once done, refused or given up once failed, retrying after a
// failure, queued before any).
func (j Job) Delivery() perch.Delivery {
	d := perch.Delivery{ID: j.ID, Kind: perch.DeliveryForward, Attempts: j.Attempts, LastError: j.LastError,
		QueuedAt: perch.Timestamp(j.CreatedAt)}
	if j.Kind == JobWorkflowEmail {
		d.Kind = perch.DeliveryEmail
	}
	finished := func(at time.Time) *time.Time { at = perch.Timestamp(at); return &at }
	switch {
	case !j.DoneAt.IsZero():
		d.State, d.FinishedAt = perch.DeliveryDelivered, finished(j.DoneAt)
	case !j.FailedAt.IsZero() && j.Refused:
		d.State, d.FinishedAt = perch.DeliveryRefused, finished(j.FailedAt)
	case !j.FailedAt.IsZero():
		d.State, d.FinishedAt = perch.DeliveryGivenUp, finished(j.FailedAt)
	default:
		d.State = perch.DeliveryQueued
		if j.Attempts > 0 {
			d.State = perch.DeliveryRetrying
		}
		next := perch.Timestamp(j.NextAt)
		d.NextAttemptAt = &next
	}
	return d
}

// RefuseJob gives the job up at once, refused: its address is one the
// SSRF guard refuses, and it would be refused again at every retry. The
// attempt counts, and reason is kept as its last error (cut to 2000
// bytes). A job given up already is left as it is; one that was carried
// out, or does not exist, is ENOTFOUND.
func (s *Store) RefuseJob(ctx context.Context, id, reason string, now time.Time) error {
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE jobs SET attempts = attempts + 1, last_error = ?, failed_at = ?, refused = TRUE,
		claimed_at = NULL WHERE id = ? AND failed_at IS NULL AND done_at IS NULL`), storableText(reason, maxJobError), ms(now), id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	var failed sql.NullInt64
	if err := s.w.QueryRowContext(ctx, s.q(`SELECT failed_at FROM jobs WHERE id = ?`), id).Scan(&failed); err != nil {
		return notFound(err, "Job")
	}
	if !failed.Valid {
		return perch.Errorf(perch.ENOTFOUND, "Job not found.")
	}
	return nil
}

// RunJobs answers the jobs orgID's runs runIDs queued, by run id, each
// run's in the order of its steps.
func (s *Store) RunJobs(ctx context.Context, orgID string, runIDs []string) (map[string][]Job, error) {
	out := map[string][]Job{}
	for chunk := range slices.Chunk(runIDs, runChunk) {
		args := []any{orgID}
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+jobColumns+` FROM jobs WHERE org_id = ? AND run_id IN (?`+
			strings.Repeat(`, ?`, len(chunk)-1)+`) AND run_id <> ''`), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			out[j.RunID] = append(out[j.RunID], j)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	for _, list := range out {
		slices.SortFunc(list, func(a, b Job) int { return cmp.Or(cmp.Compare(a.Step, b.Step), strings.Compare(a.ID, b.ID)) })
	}
	return out, nil
}

// FailedJob is a job that was refused or given up, with the name of the
// workflow that queued it ("" when the workflow was deleted since).
type FailedJob struct {
	Job
	WorkflowName string
}

// FailedDeliveries answers one page of orgID's deliveries (workflow
// forwards and e-mails: not the organisation's other jobs, such as
// billing's seat updates) that were refused or given up, the most recently given up first, and the cursor of the next
// page ("" after the last); a cursor this store did not answer is
// EBADREQUEST.
func (s *Store) FailedDeliveries(ctx context.Context, orgID string, page perch.Page) ([]FailedJob, string, error) {
	where := []string{`j.org_id = ?`, `j.failed_at IS NOT NULL`, `j.kind IN (?, ?)`}
	args := []any{orgID, JobWorkflowForward, JobWorkflowEmail}
	if page.Cursor != "" {
		at, id, err := decodeFailedCursor(page.Cursor)
		if err != nil {
			return nil, "", err
		}
		where = append(where, `(j.failed_at < ? OR (j.failed_at = ? AND j.id < ?))`)
		args = append(args, at, at, id)
	}
	limit := min(cmp.Or(max(page.Limit, 0), perch.DefaultPageLimit), perch.MaxPageLimit)
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+prefixed("j", jobColumns)+`, COALESCE(w.name, '') FROM jobs j
		LEFT JOIN workflows w ON w.id = j.workflow_id AND w.org_id = j.org_id`+whereClause(where)+`
		ORDER BY j.failed_at DESC, j.id DESC LIMIT ?`), append(args, limit+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	out := []FailedJob{}
	for rows.Next() {
		var f FailedJob
		var name string
		j, err := scanJob(scanWith{rows, &name})
		if err != nil {
			return nil, "", err
		}
		f.Job, f.WorkflowName = j, name
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(ms(last.FailedAt), 10) + ":" + last.ID))
	}
	return out, next, nil
}

// decodeFailedCursor reads a cursor of FailedDeliveries: the last row's
// failed_at and id.
func decodeFailedCursor(cursor string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, "", errBadCursor
	}
	at, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || n < 0 || !plainID(id) {
		return 0, "", errBadCursor
	}
	return n, id, nil
}

// prefixed qualifies each of a list of columns with the table alias t.
func prefixed(t, columns string) string {
	fields := strings.Split(columns, ",")
	for i, f := range fields {
		fields[i] = t + "." + strings.TrimSpace(f)
	}
	return strings.Join(fields, ", ")
}

// scanWith scans a row's leading columns into what scanJob gives it and
// the rest into extra.
type scanWith struct {
	row   interface{ Scan(...any) error }
	extra any
}

func (sw scanWith) Scan(dest ...any) error { return sw.row.Scan(append(dest, sw.extra)...) }

// RequeueJob queues orgID's job id again, due at once, as if new: no
// attempts, no error, and WorkflowRetryFor from now to succeed. Only a job
// that was given up may be requeued, or a refused one when allowRefused
// (the server now lets forwards reach private addresses); anything else is
// ECONFLICT (a job still being tried, delivered, or refused), and a job
// that is not orgID's is ENOTFOUND. It answers the job before and after.
func (s *Store) RequeueJob(ctx context.Context, orgID, id string, allowRefused bool, now time.Time) (before, after Job, err error) {
	lock := ""
	if s.dialect == Postgres {
		lock = ` FOR UPDATE`
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		before, err = scanJob(tx.QueryRowContext(ctx, s.q(`SELECT `+jobColumns+` FROM jobs WHERE id = ? AND org_id = ? AND kind IN (?, ?)`+lock),
			id, orgID, JobWorkflowForward, JobWorkflowEmail))
		if err != nil {
			return notFound(err, "Delivery")
		}
		switch d := before.Delivery(); {
		case d.State == perch.DeliveryRefused && !allowRefused:
			return perch.Errorf(perch.ECONFLICT, "This delivery was refused because its address is one Perch may not reach "+
				"(loopback, private, link-local or metadata): a retry would be refused again. Change the workflow's forward URL; "+
				"the operator may allow such addresses with PERCH_WORKFLOW_ALLOW_PRIVATE.")
		case d.State != perch.DeliveryGivenUp && d.State != perch.DeliveryRefused:
			return perch.Errorf(perch.ECONFLICT, "Only a delivery that was given up or refused can be retried; this one is %s.",
				strings.ReplaceAll(d.State, "_", " "))
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE jobs SET attempts = 0, last_error = '', failed_at = NULL, refused = FALSE,
			claimed_at = NULL, created_at = ?, next_at = ? WHERE id = ?`), ms(now), ms(now), id); err != nil {
			return err
		}
		after, err = scanJob(tx.QueryRowContext(ctx, s.q(`SELECT `+jobColumns+` FROM jobs WHERE id = ?`), id))
		return err
	})
	return before, after, err
}
