package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// The starter workflows are the marketplace's first listings: the server
// seeds them at every start (SeedStarterWorkflows), authored by an
// organisation of Perch's own.
//
// That organisation has no members, so no one can sign into it, act for it
// or start a checkout for it. It is on the solo plan with the status "none"
// (no subscription): the trial jobs, which look only at organisations on
// their trial, pass it by, and MRR, which counts active subscriptions,
// leaves it out. It is no customer: the admin lists, counts and metrics
// leave it out (realOrgs), and the admin routes do not find it.

// StarterOrgID is the id of the organisation that authors the starter
// workflows. It is lower-case letters like every id of this store (cursors
// hold ids and accept only those), and shorter than the random ones, so
// newID never makes it.
const StarterOrgID = "perch"

// starterOrgSlug is that organisation's slug. Every other slug ends in
// "-" and six characters of its organisation's id, so none can clash.
const starterOrgSlug = "perch"

// SeedStarterWorkflows makes ws the published workflows of the starter
// organisation StarterOrgID, created with the name author when it does not
// exist yet. A workflow of ws is matched to the stored one by its id: a new
// one is created and published at version 1; one whose name, description,
// condition or steps changed is updated and published again with a higher
// version, so installed copies see an update; an unchanged one is left as it
// is, nothing written. A starter no longer in ws is withdrawn from the
// marketplace (its snapshot stays, for the copies installed from it).
//
// It runs at every start on every instance, possibly at the same moment:
// rows are inserted with ON CONFLICT DO NOTHING and compared under a row
// lock, so concurrent calls write each change once. A workflow id that is
// not lower-case letters and digits is EBADREQUEST; one that another
// organisation's workflow has is ENOTFOUND.
func (s *Store) SeedStarterWorkflows(ctx context.Context, author string, ws []*perch.Workflow) error {
	author = strings.TrimSpace(author)
	if author == "" {
		return perch.Errorf(perch.EBADREQUEST, "The starter workflows need an author.")
	}
	for _, w := range ws {
		if w == nil || !plainID(w.ID) {
			return perch.Errorf(perch.EBADREQUEST, "A starter workflow's id must be lower-case letters and digits.")
		}
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO orgs (id, name, slug, plan, plan_status, trial_ends_at, created_at)
			VALUES (?, ?, ?, 'solo', ?, NULL, ?) ON CONFLICT (id) DO NOTHING`),
			StarterOrgID, author, starterOrgSlug, perch.PlanNone, ms(now)); err != nil {
			return fmt.Errorf("create the starter organisation: %w", err)
		}
		ids := make([]any, 0, len(ws)+1)
		ids = append(ids, StarterOrgID)
		for _, w := range ws {
			if err := s.seedStarter(ctx, tx, w, now); err != nil {
				return fmt.Errorf("starter workflow %s: %w", w.ID, err)
			}
			ids = append(ids, w.ID)
		}
		notIn := ""
		if len(ws) > 0 {
			notIn = ` AND id NOT IN (` + strings.TrimSuffix(strings.Repeat("?, ", len(ws)), ", ") + `)`
		}
		_, err := tx.ExecContext(ctx, s.q(`UPDATE workflows SET published = FALSE, updated_at = ?
			WHERE org_id = ? AND published`+notIn), append([]any{ms(now)}, ids...)...)
		return err
	})
}

// seedStarter creates, updates and publishes one starter workflow as
// SeedStarterWorkflows says.
func (s *Store) seedStarter(ctx context.Context, tx *sql.Tx, w *perch.Workflow, now time.Time) error {
	steps, err := encodeSteps(w.Steps)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO workflows
		(id, org_id, name, description, enabled, condition, steps, version, published, created_by, created_at, updated_at)
		VALUES (?, ?, ?, ?, FALSE, ?, ?, 1, FALSE, '', ?, ?) ON CONFLICT (id) DO NOTHING`),
		w.ID, StarterOrgID, w.Name, w.Description, w.Condition, steps, ms(now), ms(now)); err != nil {
		return err
	}
	cur, err := s.workflow(ctx, tx, StarterOrgID, w.ID, true)
	if err != nil {
		return err
	}
	snap, err := s.snapshot(ctx, tx, StarterOrgID, w.ID)
	if err != nil {
		return err
	}
	stored := cur.Name == w.Name && cur.Description == w.Description && cur.Condition == w.Condition && sameSteps(cur.Steps, w.Steps)
	listed := snap.version.Valid && snap.name.String == w.Name && snap.description.String == w.Description &&
		snap.condition.String == w.Condition && snap.steps.String == steps
	if stored && listed && cur.Published {
		return nil
	}
	if !stored {
		version := cur.Version
		if cur.Condition != w.Condition || !sameSteps(cur.Steps, w.Steps) {
			version++
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE workflows SET name = ?, description = ?, condition = ?, steps = ?, version = ?, updated_at = ?
			WHERE id = ? AND org_id = ?`), w.Name, w.Description, w.Condition, steps, version, ms(now), w.ID, StarterOrgID); err != nil {
			return err
		}
	}
	_, err = s.publish(ctx, tx, StarterOrgID, w.ID)
	return err
}
