package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/perch-dev/perch"
)

// Kinds of queued job.
const (
	JobWorkflowForward = "workflow.forward"
	JobWorkflowEmail   = "workflow.email"
)

// Job is work queued to run after a notification is stored (a workflow's
// forward or e-mail), never in the request that brought the notification.
// Jobs live in the database, so none is lost when an instance stops; they
// are retried with backoff for perch.WorkflowRetryFor.
type Job struct {
	ID        string
	OrgID     string
	Kind      string          // JobWorkflowForward, JobWorkflowEmail
	Payload   json.RawMessage // the kind's own data; null once delivered
	Attempts  int             // failures recorded by RetryJob (and RefuseJob)
	CreatedAt time.Time       // when it was queued (or requeued by RequeueJob)
	NextAt    time.Time       // when it is due; for a claimed job, when its lease ends
	LastError string
	FailedAt  time.Time // when it was given up; zero while it is still tried
	// Where it came from: the workflow, the run and the index of the run's
	// step that queued it ("", "" and -1 when not known: jobs queued by
	// EnqueueJobs without them, or before runs were linked), and the
	// notification it carries.
	WorkflowID     string
	RunID          string
	Step           int
	NotificationID string
	Refused        bool      // given up at once: the SSRF guard refused its address (RefuseJob)
	DoneAt         time.Time // when it was carried out (CompleteJob); zero until then
}

// Backoff bounds: the first retry waits about jobBackoffMin, each one after
// it twice as long, up to jobBackoffMax.
const (
	jobBackoffMin = 10 * time.Second
	jobBackoffMax = time.Hour
)

// maxJobKind bounds a job's kind and last error as stored.
const (
	maxJobKind  = 100
	maxJobError = 2000
)

// JobBackoff is how long a job waits after its attempts-th failure: 10 s,
// doubling with each failure, capped at an hour, less up to 20% jitter so
// that jobs that failed together are not all retried together.
func JobBackoff(attempts int) time.Duration {
	d := jobBackoffMax
	if attempts <= 1 {
		d = jobBackoffMin
	} else if attempts < 20 { // 10 s << 19 is far beyond an hour already
		d = min(jobBackoffMin<<(attempts-1), jobBackoffMax)
	}
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

// EnqueueJobs queues jobs in one transaction, due at once. It sets each
// job's ID, CreatedAt and NextAt in the slice it is given, and clears
// Attempts, LastError and FailedAt. A job without an organisation, with a
// kind that is not text of 1 to 100 bytes, or with a payload that is not
// JSON in UTF-8, is EBADREQUEST and nothing is queued; an organisation
// that does not exist is ENOTFOUND.
func (s *Store) EnqueueJobs(ctx context.Context, jobs []Job) error {
	if err := checkJobs(jobs); err != nil {
		return err
	}
	if len(jobs) == 0 {
		return nil
	}
	now := s.now()
	return s.tx(ctx, func(tx *sql.Tx) error { return s.insertJobs(ctx, tx, jobs, now, false) })
}

// checkJobs refuses jobs that EnqueueJobs cannot queue, naming every one.
func checkJobs(jobs []Job) error {
	var problems []string
	for i, j := range jobs {
		if j.OrgID == "" || j.Kind == "" || len(j.Kind) > maxJobKind || storableText(j.Kind, maxJobKind) != j.Kind {
			problems = append(problems, "job "+strconv.Itoa(i)+" needs an organisation and a kind of at most 100 bytes")
		}
		if len(j.Payload) > 0 && (!json.Valid(j.Payload) || !utf8.Valid(j.Payload)) {
			problems = append(problems, "job "+strconv.Itoa(i)+"'s payload is not JSON")
		}
	}
	if len(problems) > 0 {
		return perch.Errorf(perch.EBADREQUEST, "The jobs cannot be queued: %s.", strings.Join(problems, "; "))
	}
	return nil
}

// insertJobs queues checked jobs in tx, due at now. With skipGone, a job
// of an organisation that no longer exists is left out instead of failing
// the transaction (which, in ingest, other deliveries share).
func (s *Store) insertJobs(ctx context.Context, tx *sql.Tx, jobs []Job, now time.Time, skipGone bool) error {
	const columns = `(id, org_id, kind, payload, created_at, next_at, workflow_id, run_id, step, notification_id)`
	insert := `INSERT INTO jobs ` + columns + ` VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	if skipGone {
		insert = `INSERT INTO jobs ` + columns + `
			SELECT ?, id, ?, ?, ?, ?, ?, ?, ?, ? FROM orgs WHERE id = ?`
	}
	for i := range jobs {
		j := &jobs[i]
		payload := string(j.Payload)
		if payload == "" {
			payload = "null"
		}
		id := newID()
		if j.RunID == "" {
			j.Step = -1
		}
		from := []any{storableText(j.WorkflowID, maxJobKind), storableText(j.RunID, maxJobKind), j.Step, storableText(j.NotificationID, maxJobKind)}
		args := append([]any{id, j.OrgID, j.Kind, payload, ms(now), ms(now)}, from...)
		if skipGone {
			args = append(append([]any{id, j.Kind, payload, ms(now), ms(now)}, from...), j.OrgID)
		}
		if _, err := tx.ExecContext(ctx, s.q(insert), args...); err != nil {
			return orgMissing(err)
		}
		j.ID, j.CreatedAt, j.NextAt = id, now, now
		j.Attempts, j.LastError, j.FailedAt = 0, "", time.Time{}
		j.Refused, j.DoneAt = false, time.Time{}
	}
	return nil
}

// NotificationJob is work to queue with a notification (a workflow's
// forward or e-mail): InsertNotifications queues it in the transaction that
// stores the notification, and only when the notification is new, so that
// neither is kept without the other and a redelivery queues nothing again.
type NotificationJob struct {
	OrgID string
	Kind  string
	// WorkflowID, RunID and Step name the run's step that queued it (the
	// run's id is given before the run is recorded, so that the job can
	// name it).
	WorkflowID string
	RunID      string
	Step       int
	// Payload makes the job's payload from the notification as stored,
	// with its id and time.
	Payload func(perch.Notification) (json.RawMessage, error)
}

// queueNotificationJobs queues the jobs of the new notifications of batch,
// whose outcome is out.
func (s *Store) queueNotificationJobs(ctx context.Context, tx *sql.Tx, batch []NewNotification, out []Stored, now time.Time) error {
	var jobs []Job
	for i := range batch {
		if out[i].Duplicate {
			continue
		}
		for _, nj := range batch[i].Jobs {
			payload, err := nj.Payload(out[i].Notification)
			if err != nil {
				return err
			}
			jobs = append(jobs, Job{OrgID: nj.OrgID, Kind: nj.Kind, Payload: payload, WorkflowID: nj.WorkflowID,
				RunID: nj.RunID, Step: nj.Step, NotificationID: out[i].Notification.ID})
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	if err := checkJobs(jobs); err != nil {
		return err
	}
	return s.insertJobs(ctx, tx, jobs, now, true)
}

const jobColumns = `id, org_id, kind, payload, attempts, created_at, next_at, last_error, failed_at,
	workflow_id, run_id, step, notification_id, refused, done_at`

func scanJob(row interface{ Scan(...any) error }) (Job, error) {
	var j Job
	var payload string
	var created, next int64
	var failed, done sql.NullInt64
	if err := row.Scan(&j.ID, &j.OrgID, &j.Kind, &payload, &j.Attempts, &created, &next, &j.LastError, &failed,
		&j.WorkflowID, &j.RunID, &j.Step, &j.NotificationID, &j.Refused, &done); err != nil {
		return Job{}, err
	}
	j.Payload = json.RawMessage(payload)
	j.CreatedAt, j.NextAt = fromMS(created), fromMS(next)
	if failed.Valid {
		j.FailedAt = fromMS(failed.Int64)
	}
	if done.Valid {
		j.DoneAt = fromMS(done.Int64)
	}
	return j, nil
}

// ClaimJobs leases up to limit due jobs (next_at at or before now, not
// given up), the earliest due first (jobs due in the same millisecond in
// no promised order), for lease: a claimed job is invisible to other
// claimers until the lease ends (its next_at becomes now+lease), so a job
// whose worker crashed is claimed again after its lease. Whoever claims it
// then must call CompleteJob or RetryJob.
//
// A job whose lease ran out after perch.WorkflowRetryFor since it was
// queued (its worker kept crashing, or stopped on its last try) is given up
// here instead of claimed again.
//
// On PostgreSQL the claim takes rows with FOR UPDATE SKIP LOCKED, so that
// instances claiming at once get different jobs; on SQLite the one writer
// runs the single UPDATE alone. A lease below a millisecond is EBADREQUEST.
func (s *Store) ClaimJobs(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Job, error) {
	if lease < time.Millisecond {
		return nil, perch.Errorf(perch.EBADREQUEST, "A job lease must be at least 1ms, not %s.", lease)
	}
	if limit < 1 {
		return []Job{}, nil
	}
	at := ms(now)
	if _, err := s.w.ExecContext(ctx, s.q(`UPDATE jobs SET failed_at = ?, claimed_at = NULL,
			last_error = CASE WHEN last_error = '' THEN 'not finished: the worker stopped' ELSE last_error END
		WHERE failed_at IS NULL AND done_at IS NULL AND claimed_at IS NOT NULL AND next_at <= ? AND created_at <= ?`),
		at, at, ms(now.Add(-perch.WorkflowRetryFor))); err != nil {
		return nil, err
	}
	skipLocked := ""
	if s.dialect == Postgres {
		skipLocked = ` FOR UPDATE SKIP LOCKED`
	}
	rows, err := s.w.QueryContext(ctx, s.q(`UPDATE jobs SET next_at = ?, claimed_at = ? WHERE id IN (
		SELECT id FROM jobs WHERE failed_at IS NULL AND done_at IS NULL AND next_at <= ? ORDER BY next_at, id LIMIT ?`+skipLocked+`)
		RETURNING `+jobColumns), ms(now.Add(lease)), at, at, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, j)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b Job) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return list, nil
}

// CompleteJob records that a job was carried out: it is kept, delivered,
// for the runs page (its payload, no longer needed, cleared) until
// PruneJobs. ENOTFOUND when there is no such job still being tried (it was
// completed, or given up, already).
func (s *Store) CompleteJob(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE jobs SET done_at = ?, claimed_at = NULL, payload = 'null'
		WHERE id = ? AND failed_at IS NULL AND done_at IS NULL`), ms(s.now()), id)
	return expectOne(res, err, "Job")
}

// RetryJob records a failure of the job: one more attempt, errText as its
// last error (cut to 2000 bytes), and next_at = now + JobBackoff(attempts),
// but never later than perch.WorkflowRetryFor after it was queued, so that
// the last try happens then. A failure at or after that time gives the job
// up for good (answered gaveUp): it is kept, with its error, for the runs
// page, until PruneJobs. A job given up already answers gaveUp and is left
// as it is; one that does not exist (completed) is ENOTFOUND.
func (s *Store) RetryJob(ctx context.Context, id, errText string, now time.Time) (gaveUp bool, err error) {
	errText = storableText(errText, maxJobError)
	lock := ""
	if s.dialect == Postgres {
		lock = ` FOR UPDATE`
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var attempts int
		var created int64
		var failed, done sql.NullInt64
		err := tx.QueryRowContext(ctx, s.q(`SELECT attempts, created_at, failed_at, done_at FROM jobs WHERE id = ?`+lock), id).
			Scan(&attempts, &created, &failed, &done)
		if err == nil && done.Valid {
			err = sql.ErrNoRows // carried out: as gone as it was before delivered jobs were kept
		}
		if err != nil {
			return notFound(err, "Job")
		}
		if failed.Valid {
			gaveUp = true
			return nil
		}
		attempts++
		deadline := fromMS(created).Add(perch.WorkflowRetryFor)
		if !now.Before(deadline) {
			gaveUp = true
			_, err := tx.ExecContext(ctx, s.q(`UPDATE jobs SET attempts = ?, last_error = ?, failed_at = ?, claimed_at = NULL
				WHERE id = ?`), attempts, errText, ms(now), id)
			return err
		}
		next := now.Add(JobBackoff(attempts))
		if next.After(deadline) {
			next = deadline
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE jobs SET attempts = ?, last_error = ?, next_at = ?, claimed_at = NULL
			WHERE id = ?`), attempts, errText, ms(next), id)
		return err
	})
	return gaveUp, err
}

// FailedJobs lists the organisation's jobs that were given up, the most
// recently given up first, at most limit of them.
func (s *Store) FailedJobs(ctx context.Context, orgID string, limit int) ([]Job, error) {
	list := []Job{}
	if limit < 1 {
		return list, nil
	}
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+jobColumns+` FROM jobs
		WHERE org_id = ? AND failed_at IS NOT NULL ORDER BY failed_at DESC, id LIMIT ?`), orgID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, j)
	}
	return list, rows.Err()
}

// PruneJobs removes the jobs given up or delivered before before, and
// answers how many it removed. Jobs still being tried are never pruned.
func (s *Store) PruneJobs(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for _, query := range []string{
		`DELETE FROM jobs WHERE failed_at IS NOT NULL AND failed_at < ?`,
		`DELETE FROM jobs WHERE done_at IS NOT NULL AND done_at < ?`,
	} {
		res, err := s.w.ExecContext(ctx, s.q(query), ms(before))
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

// storableText answers s as both databases can store it as text, in at most
// max bytes: valid UTF-8 without NUL (PostgreSQL refuses both), cut at a
// character boundary. An error's text can come from anywhere, such as a
// forward target's response.
func storableText(s string, max int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
