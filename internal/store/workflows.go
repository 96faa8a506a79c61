package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/perch-dev/perch"
)

// Workflows (docs/DESIGN.md, Workflows and the marketplace) are kept one row
// each, their steps as the JSON
// of []perch.Step. Every query names the organisation: another
// organisation's workflow is ENOTFOUND, as if it did not exist. The
// marketplace (marketplace.go) is the one place that reads across
// organisations, and only published snapshots.

const workflowColumns = `id, org_id, name, description, enabled, condition, steps, version, published,
	source_workflow_id, source_version, forked_from, evaluated, matched, failed, created_by, created_at, updated_at`

func scanWorkflow(row interface{ Scan(...any) error }) (*perch.Workflow, error) {
	var w perch.Workflow
	var steps string
	var sourceID, forkedFrom sql.NullString
	var sourceVersion sql.NullInt64
	var created, updated int64
	if err := row.Scan(&w.ID, &w.OrgID, &w.Name, &w.Description, &w.Enabled, &w.Condition, &steps, &w.Version, &w.Published,
		&sourceID, &sourceVersion, &forkedFrom, &w.Stats.Evaluated, &w.Stats.Matched, &w.Stats.Failed,
		&w.CreatedBy, &created, &updated); err != nil {
		return nil, err
	}
	var err error
	if w.Steps, err = decodeSteps(steps); err != nil {
		return nil, fmt.Errorf("workflow %s: %w", w.ID, err)
	}
	if sourceID.Valid {
		w.Source = &perch.WorkflowSource{WorkflowID: sourceID.String, Version: int(sourceVersion.Int64)}
	}
	if forkedFrom.Valid {
		w.ForkedFrom = &forkedFrom.String
	}
	w.CreatedAt, w.UpdatedAt = fromMS(created), fromMS(updated)
	return &w, nil
}

// encodeSteps is the stored form of steps: a JSON array, [] for none.
func encodeSteps(steps []perch.Step) (string, error) {
	if steps == nil {
		steps = []perch.Step{}
	}
	b, err := json.Marshal(steps)
	if err != nil {
		return "", fmt.Errorf("encode workflow steps: %w", err)
	}
	return string(b), nil
}

// decodeSteps reads stored steps back; never nil, so that an empty list
// answers [] rather than null.
func decodeSteps(s string) ([]perch.Step, error) {
	steps := []perch.Step{}
	if err := json.Unmarshal([]byte(s), &steps); err != nil {
		return nil, fmt.Errorf("decode workflow steps: %w", err)
	}
	if steps == nil {
		steps = []perch.Step{}
	}
	return steps, nil
}

// sameSteps reports whether two step lists store the same.
func sameSteps(a, b []perch.Step) bool {
	x, errX := encodeSteps(a)
	y, errY := encodeSteps(b)
	return errX == nil && errY == nil && x == y
}

// Workflows answers orgID's workflows, newest first.
func (s *Store) Workflows(ctx context.Context, orgID string) ([]*perch.Workflow, error) {
	return s.workflows(ctx, `SELECT `+workflowColumns+` FROM workflows WHERE org_id = ? ORDER BY created_at DESC, id DESC`, orgID)
}

// EnabledWorkflows answers orgID's enabled workflows in the order the
// engine runs them: oldest first.
func (s *Store) EnabledWorkflows(ctx context.Context, orgID string) ([]*perch.Workflow, error) {
	return s.workflows(ctx, `SELECT `+workflowColumns+` FROM workflows WHERE org_id = ? AND enabled ORDER BY created_at, id`, orgID)
}

func (s *Store) workflows(ctx context.Context, query string, args ...any) ([]*perch.Workflow, error) {
	rows, err := s.r.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*perch.Workflow{}
	for rows.Next() {
		w, err := scanWorkflow(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// Workflow answers orgID's workflow id, or ENOTFOUND (also when it belongs
// to another organisation).
func (s *Store) Workflow(ctx context.Context, orgID, id string) (*perch.Workflow, error) {
	return s.workflow(ctx, s.r, orgID, id, false)
}

// workflow reads one of orgID's workflows; lock holds its row until the
// transaction ends (FOR UPDATE on PostgreSQL; SQLite has one writer).
func (s *Store) workflow(ctx context.Context, db querier, orgID, id string, lock bool) (*perch.Workflow, error) {
	query := `SELECT ` + workflowColumns + ` FROM workflows WHERE id = ? AND org_id = ?`
	if lock && s.dialect == Postgres {
		query += ` FOR UPDATE`
	}
	w, err := scanWorkflow(db.QueryRowContext(ctx, s.q(query), id, orgID))
	return w, notFound(err, "Workflow")
}

// CreateWorkflow stores a new workflow of w.OrgID made by w.CreatedBy with
// w's name, description, enabled, condition and steps, and answers it as
// stored: a new id, version 1, unpublished, no source, zero stats. The
// caller validates w first.
func (s *Store) CreateWorkflow(ctx context.Context, w *perch.Workflow) (*perch.Workflow, error) {
	if w == nil {
		return nil, perch.Errorf(perch.EBADREQUEST, "No workflow to create.")
	}
	now := s.now()
	out := &perch.Workflow{ID: newID(), OrgID: w.OrgID, Name: w.Name, Description: w.Description, Enabled: w.Enabled,
		Condition: w.Condition, Steps: w.Steps, Version: 1, CreatedBy: w.CreatedBy, CreatedAt: now, UpdatedAt: now}
	if out.Steps == nil {
		out.Steps = []perch.Step{}
	}
	if err := s.insertWorkflow(ctx, s.w, out); err != nil {
		return nil, err
	}
	return out, nil
}

// insertWorkflow stores w as it is (the published columns stay empty).
func (s *Store) insertWorkflow(ctx context.Context, db querier, w *perch.Workflow) error {
	steps, err := encodeSteps(w.Steps)
	if err != nil {
		return err
	}
	var sourceID, forkedFrom sql.NullString
	var sourceVersion sql.NullInt64
	if w.Source != nil {
		sourceID = sql.NullString{String: w.Source.WorkflowID, Valid: true}
		sourceVersion = sql.NullInt64{Int64: int64(w.Source.Version), Valid: true}
	}
	if w.ForkedFrom != nil {
		forkedFrom = sql.NullString{String: *w.ForkedFrom, Valid: true}
	}
	_, err = db.ExecContext(ctx, s.q(`INSERT INTO workflows
		(id, org_id, name, description, enabled, condition, steps, version, published,
		 source_workflow_id, source_version, forked_from, created_by, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, FALSE, ?, ?, ?, ?, ?, ?)`),
		w.ID, w.OrgID, w.Name, w.Description, w.Enabled, w.Condition, steps, w.Version,
		sourceID, sourceVersion, forkedFrom, w.CreatedBy, ms(w.CreatedAt), ms(w.UpdatedAt))
	if isUniqueViolation(err) {
		return perch.Errorf(perch.ECONFLICT, "The organisation already has this workflow installed.")
	}
	return err
}

// WorkflowUpdate is a change of a workflow: nil fields stay as they are.
// A change of Condition or Steps bumps the version. Published false
// withdraws the workflow from the marketplace; true publishes it as
// PublishWorkflow does, after the other changes.
type WorkflowUpdate struct {
	Name, Description, Condition *string
	Steps                        *[]perch.Step
	Enabled                      *bool
	Published                    *bool
}

// UpdateWorkflow applies u to orgID's workflow id and answers it before
// and after; ENOTFOUND when orgID has no such workflow.
func (s *Store) UpdateWorkflow(ctx context.Context, orgID, id string, u WorkflowUpdate) (before, after *perch.Workflow, err error) {
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if before, err = s.workflow(ctx, tx, orgID, id, true); err != nil {
			return err
		}
		next := *before
		if u.Name != nil {
			next.Name = *u.Name
		}
		if u.Description != nil {
			next.Description = *u.Description
		}
		if u.Enabled != nil {
			next.Enabled = *u.Enabled
		}
		changed := false
		if u.Condition != nil && *u.Condition != before.Condition {
			next.Condition, changed = *u.Condition, true
		}
		if u.Steps != nil && !sameSteps(*u.Steps, before.Steps) {
			next.Steps, changed = *u.Steps, true
			if next.Steps == nil {
				next.Steps = []perch.Step{}
			}
		}
		if changed {
			next.Version++
		}
		next.UpdatedAt = s.now()
		steps, err := encodeSteps(next.Steps)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE workflows SET name = ?, description = ?, enabled = ?, condition = ?, steps = ?,
			version = ?, updated_at = ? WHERE id = ? AND org_id = ?`),
			next.Name, next.Description, next.Enabled, next.Condition, steps, next.Version, ms(next.UpdatedAt), id, orgID)
		if err != nil {
			return err
		}
		switch {
		case u.Published == nil:
			after = &next
		case *u.Published:
			after, err = s.publish(ctx, tx, orgID, id)
		default:
			after, err = s.withdraw(ctx, tx, orgID, id)
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return before, after, nil
}

// DeleteWorkflow deletes orgID's workflow id with its runs and answers what
// it was; ENOTFOUND when orgID has no such workflow. Installed copies of
// it elsewhere stay, without updates from now on.
func (s *Store) DeleteWorkflow(ctx context.Context, orgID, id string) (*perch.Workflow, error) {
	var w *perch.Workflow
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		if w, err = s.workflow(ctx, tx, orgID, id, true); err != nil {
			return err
		}
		// On SQLite runs have no foreign key to cascade (migration 00020).
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM workflow_runs WHERE workflow_id = ?`), id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM workflows WHERE id = ? AND org_id = ?`), id, orgID)
		return expectOne(res, err, "Workflow")
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// PublishWorkflow makes the current version of orgID's workflow id public:
// the marketplace shows and installs a snapshot of its name, description,
// condition and steps as they are now, until the author publishes again.
// When it was published before and has changed since without a new version
// (a new name or description), the version is bumped first, so that
// installed copies see an update. ENOTFOUND when orgID has no such workflow.
func (s *Store) PublishWorkflow(ctx context.Context, orgID, id string) (*perch.Workflow, error) {
	var w *perch.Workflow
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		w, err = s.publish(ctx, tx, orgID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (s *Store) publish(ctx context.Context, tx *sql.Tx, orgID, id string) (*perch.Workflow, error) {
	w, err := s.workflow(ctx, tx, orgID, id, true)
	if err != nil {
		return nil, err
	}
	snap, err := s.snapshot(ctx, tx, orgID, id)
	if err != nil {
		return nil, err
	}
	steps, err := encodeSteps(w.Steps)
	if err != nil {
		return nil, err
	}
	if snap.version.Valid && int(snap.version.Int64) >= w.Version &&
		(snap.name.String != w.Name || snap.description.String != w.Description ||
			snap.condition.String != w.Condition || snap.steps.String != steps) {
		w.Version = int(snap.version.Int64) + 1
	}
	now := s.now()
	w.Published, w.UpdatedAt = true, now
	_, err = tx.ExecContext(ctx, s.q(`UPDATE workflows SET version = ?, published = TRUE, published_at = ?, published_version = ?,
		published_name = ?, published_description = ?, published_condition = ?, published_steps = ?, updated_at = ?
		WHERE id = ? AND org_id = ?`),
		w.Version, ms(now), w.Version, w.Name, w.Description, w.Condition, steps, ms(now), id, orgID)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// publishedSnapshot is what a workflow's published_* columns hold; all
// NULL before it was first published.
type publishedSnapshot struct {
	version                             sql.NullInt64
	name, description, condition, steps sql.NullString
}

func (s *Store) snapshot(ctx context.Context, tx *sql.Tx, orgID, id string) (publishedSnapshot, error) {
	var p publishedSnapshot
	err := tx.QueryRowContext(ctx, s.q(`SELECT published_version, published_name, published_description, published_condition, published_steps
		FROM workflows WHERE id = ? AND org_id = ?`), id, orgID).Scan(&p.version, &p.name, &p.description, &p.condition, &p.steps)
	return p, notFound(err, "Workflow")
}

// withdraw takes orgID's workflow id out of the marketplace. Its snapshot
// stays: installed copies still compare their version with it.
func (s *Store) withdraw(ctx context.Context, tx *sql.Tx, orgID, id string) (*perch.Workflow, error) {
	now := s.now()
	res, err := tx.ExecContext(ctx, s.q(`UPDATE workflows SET published = FALSE, updated_at = ? WHERE id = ? AND org_id = ?`), ms(now), id, orgID)
	if err := expectOne(res, err, "Workflow"); err != nil {
		return nil, err
	}
	return s.workflow(ctx, tx, orgID, id, false)
}
