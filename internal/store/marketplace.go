package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// The marketplace (docs/DESIGN.md, Workflows and the marketplace) reads
// across organisations, but only the
// snapshot a workflow's author published: the published_* columns.

// Listing is a published workflow as the marketplace shows it.
type Listing struct {
	// Workflow is the published snapshot: its id, author organisation,
	// name, description, condition and steps as published, and the
	// published version. Stats and the author's user are left out.
	Workflow    *perch.Workflow
	OrgName     string // the author's organisation
	Installs    int64
	PublishedAt time.Time
}

// stripAuthorTargets blanks what belongs to the author's organisation in
// published steps: a forward step's URL and secret and an e-mail step's
// target. Every listing is read through it, so neither the marketplace nor
// an install or fork of a listing ever carries them into another
// organisation; the installer fills them in before enabling the copy.
func stripAuthorTargets(steps []perch.Step) {
	for i := range steps {
		if steps[i].Forward != nil {
			steps[i].Forward = &perch.ForwardStep{}
		}
		if steps[i].Email != nil {
			steps[i].Email = &perch.EmailStep{}
		}
	}
}

// keepOwnTargets fills the blanked forward and e-mail steps of a new
// version (stripAuthorTargets) from the installed copy's own steps, in
// order: the n-th forward step of next takes the URL and secret of the
// n-th forward step of mine, and likewise e-mail steps' targets, so that
// updating an install keeps what its organisation configured.
func keepOwnTargets(next, mine []perch.Step) []perch.Step {
	var forwards []*perch.ForwardStep
	var emails []*perch.EmailStep
	for _, st := range mine {
		if st.Forward != nil {
			forwards = append(forwards, st.Forward)
		}
		if st.Email != nil {
			emails = append(emails, st.Email)
		}
	}
	out := make([]perch.Step, len(next))
	for i, st := range next {
		if st.Forward != nil && len(forwards) > 0 {
			f := *forwards[0]
			st.Forward, forwards = &f, forwards[1:]
		}
		if st.Email != nil && len(emails) > 0 {
			e := *emails[0]
			st.Email, emails = &e, emails[1:]
		}
		out[i] = st
	}
	return out
}

// Marketplace sorts.
const (
	SortPopular = "popular" // most installed first, then most recently published
	SortRecent  = "recent"  // most recently published first
)

const listingColumns = `w.id, w.org_id, o.name, w.published_name, w.published_description, w.published_condition, w.published_steps,
	w.published_version, w.installs, w.published_at, w.created_at`

const listingFrom = ` FROM workflows w JOIN orgs o ON o.id = w.org_id`

func scanListing(row interface{ Scan(...any) error }) (*Listing, error) {
	var l Listing
	w := &perch.Workflow{Published: true}
	var steps string
	var published, created int64
	if err := row.Scan(&w.ID, &w.OrgID, &l.OrgName, &w.Name, &w.Description, &w.Condition, &steps,
		&w.Version, &l.Installs, &published, &created); err != nil {
		return nil, err
	}
	var err error
	if w.Steps, err = decodeSteps(steps); err != nil {
		return nil, err
	}
	stripAuthorTargets(w.Steps)
	l.PublishedAt = fromMS(published)
	w.CreatedAt, w.UpdatedAt = fromMS(created), l.PublishedAt
	l.Workflow = w
	return &l, nil
}

// Marketplace answers one page of the published workflows of every
// organisation: those whose published name or description holds q
// without regard to case (all when q is ""), sorted by sort (SortPopular
// when ""), and the cursor of the next page ("" after the last). An
// unknown sort, or a cursor this store did not answer for that sort, is
// EBADREQUEST.
func (s *Store) Marketplace(ctx context.Context, q, sort string, page perch.Page) ([]*Listing, string, error) {
	sort = cmp.Or(sort, SortPopular)
	if sort != SortPopular && sort != SortRecent {
		return nil, "", perch.Errorf(perch.EBADREQUEST, "sort must be %s or %s.", SortPopular, SortRecent)
	}
	limit := min(max(page.Limit, 0), perch.MaxPageLimit)
	if limit == 0 {
		limit = perch.DefaultPageLimit
	}
	where := []string{`w.published`}
	var args []any
	if q = strings.TrimSpace(q); q != "" {
		like := containsPattern(q)
		where = append(where, `(lower(w.published_name) LIKE ? ESCAPE '\' OR lower(w.published_description) LIKE ? ESCAPE '\')`)
		args = append(args, like, like)
	}
	if page.Cursor != "" {
		c, err := decodeListingCursor(page.Cursor, sort)
		if err != nil {
			return nil, "", err
		}
		after := `(w.published_at < ? OR (w.published_at = ? AND w.id < ?))`
		if sort == SortPopular {
			where = append(where, `(w.installs < ? OR (w.installs = ? AND `+after+`))`)
			args = append(args, c.installs, c.installs)
		} else {
			where = append(where, after)
		}
		args = append(args, c.at, c.at, c.id)
	}
	order := ` ORDER BY w.published_at DESC, w.id DESC`
	if sort == SortPopular {
		order = ` ORDER BY w.installs DESC, w.published_at DESC, w.id DESC`
	}
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+listingColumns+listingFrom+whereClause(where)+order+` LIMIT ?`), append(args, limit+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	out := []*Listing{}
	for rows.Next() {
		l, err := scanListing(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = encodeListingCursor(sort, out[limit-1])
	}
	return out, next, nil
}

// listingCursor names the last listing of a page in the order of its sort.
type listingCursor struct {
	installs int64 // SortPopular only
	at       int64
	id       string
}

// encodeListingCursor is the cursor of the page after l: the sort's first
// letter, then the keys it orders by.
func encodeListingCursor(sort string, l *Listing) string {
	at := strconv.FormatInt(ms(l.PublishedAt), 10)
	v := "r:" + at + ":" + l.Workflow.ID
	if sort == SortPopular {
		v = "p:" + strconv.FormatInt(l.Installs, 10) + ":" + at + ":" + l.Workflow.ID
	}
	return base64.RawURLEncoding.EncodeToString([]byte(v))
}

func decodeListingCursor(cursor, sort string) (listingCursor, error) {
	var c listingCursor
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return c, errBadCursor
	}
	parts := strings.Split(string(b), ":")
	want, n := "r", 3
	if sort == SortPopular {
		want, n = "p", 4
	}
	if len(parts) != n || parts[0] != want || !plainID(parts[n-1]) {
		return c, errBadCursor
	}
	c.id = parts[n-1]
	if c.at, err = strconv.ParseInt(parts[n-2], 10, 64); err != nil || c.at < 0 {
		return c, errBadCursor
	}
	if sort == SortPopular {
		if c.installs, err = strconv.ParseInt(parts[1], 10, 64); err != nil || c.installs < 0 {
			return c, errBadCursor
		}
	}
	return c, nil
}

// Listing answers the published workflow id of any organisation, or
// ENOTFOUND when there is none (or it was withdrawn).
func (s *Store) Listing(ctx context.Context, id string) (*Listing, error) {
	return s.listing(ctx, s.r, id)
}

func (s *Store) listing(ctx context.Context, db querier, id string) (*Listing, error) {
	l, err := scanListing(db.QueryRowContext(ctx, s.q(`SELECT `+listingColumns+listingFrom+` WHERE w.id = ? AND w.published`), id))
	return l, notFound(err, "Workflow")
}

// Installed is what InstallWorkflow did.
type Installed struct {
	Workflow *perch.Workflow // the copy, as it now is
	Updated  bool            // an existing copy was brought to the published version; else a new copy
	// SwitchedOff reports that the update changed the condition or steps
	// of a copy that was on, and switched it off.
	SwitchedOff bool
	// PreviousName and PreviousDescription are the copy's before an update
	// (which brings the source's).
	PreviousName, PreviousDescription string
}

// InstallWorkflow copies the published workflow sourceID into orgID, made
// by createdBy: a new, disabled workflow linked to its source and version,
// counted as one install of the source. When orgID already has a copy of
// sourceID, that copy is brought to the source's published version instead
// (name, description, condition and steps replaced, as published; version
// bumped when the condition or steps change, as an edit bumps it), Updated
// is set and no install is counted. An update
// that changes the condition or steps also switches the copy off: what
// runs on an organisation's notifications is what its owners and admins
// switched on, never what the author published since, so they review the
// new version and switch it on again (a forward step, for one, would send
// their notifications to the author). Steps are copied as published
// without the author's forward URLs and secrets and e-mail targets
// (stripAuthorTargets); an update keeps the copy's own (keepOwnTargets).
// ENOTFOUND when sourceID is not published.
func (s *Store) InstallWorkflow(ctx context.Context, orgID, sourceID, createdBy string) (*Installed, error) {
	var out *Installed
	err := s.tx(ctx, func(tx *sql.Tx) error {
		src, err := s.listing(ctx, tx, sourceID)
		if err != nil {
			return err
		}
		lock := ""
		if s.dialect == Postgres {
			lock = ` FOR UPDATE`
		}
		w, err := scanWorkflow(tx.QueryRowContext(ctx, s.q(`SELECT `+workflowColumns+` FROM workflows
			WHERE source_workflow_id = ? AND org_id = ?`+lock), sourceID, orgID))
		switch {
		case err == nil:
			was, name, desc := w.Enabled, w.Name, w.Description
			if err := s.updateInstalled(ctx, tx, w, src); err != nil {
				return err
			}
			out = &Installed{Workflow: w, Updated: true, SwitchedOff: was && !w.Enabled, PreviousName: name, PreviousDescription: desc}
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		now := s.now()
		w = &perch.Workflow{ID: newID(), OrgID: orgID, Name: src.Workflow.Name, Description: src.Workflow.Description,
			Condition: src.Workflow.Condition, Steps: src.Workflow.Steps, Version: 1,
			Source:    &perch.WorkflowSource{WorkflowID: sourceID, Version: src.Workflow.Version},
			CreatedBy: createdBy, CreatedAt: now, UpdatedAt: now}
		if err := s.insertWorkflow(ctx, tx, w); err != nil {
			return err
		}
		out = &Installed{Workflow: w}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE workflows SET installs = installs + 1 WHERE id = ?`), sourceID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// updateInstalled brings the installed copy w to src's published version
// (its name and description too), switching it off when its condition or
// steps change.
func (s *Store) updateInstalled(ctx context.Context, tx *sql.Tx, w *perch.Workflow, src *Listing) error {
	steps := keepOwnTargets(src.Workflow.Steps, w.Steps)
	if w.Condition != src.Workflow.Condition || !sameSteps(w.Steps, steps) {
		w.Condition, w.Steps = src.Workflow.Condition, steps
		w.Version++
		w.Enabled = false
	}
	w.Name, w.Description = src.Workflow.Name, src.Workflow.Description
	w.Source = &perch.WorkflowSource{WorkflowID: src.Workflow.ID, Version: src.Workflow.Version}
	w.UpdatedAt = s.now()
	encoded, err := encodeSteps(w.Steps)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, s.q(`UPDATE workflows SET name = ?, description = ?, enabled = ?, condition = ?, steps = ?, version = ?,
		source_version = ?, updated_at = ? WHERE id = ? AND org_id = ?`),
		w.Name, w.Description, w.Enabled, w.Condition, encoded, w.Version, w.Source.Version, ms(w.UpdatedAt), w.ID, w.OrgID)
	return expectOne(res, err, "Workflow")
}

// ForkWorkflow copies a workflow into orgID, made by createdBy, as an
// independent, disabled one that remembers only what it was forked from:
// one of orgID's own workflows as it is now, or else any organisation's
// published workflow as published, without the author's forward URLs and
// secrets and e-mail targets. ENOTFOUND when id is neither.
func (s *Store) ForkWorkflow(ctx context.Context, orgID, id, createdBy string) (*perch.Workflow, error) {
	var w *perch.Workflow
	err := s.tx(ctx, func(tx *sql.Tx) error {
		orig, err := s.workflow(ctx, tx, orgID, id, false)
		if perch.ErrorCode(err) == perch.ENOTFOUND {
			var l *Listing
			if l, err = s.listing(ctx, tx, id); err == nil {
				orig = l.Workflow
			}
		}
		if err != nil {
			return err
		}
		now := s.now()
		w = &perch.Workflow{ID: newID(), OrgID: orgID, Name: orig.Name, Description: orig.Description,
			Condition: orig.Condition, Steps: orig.Steps, Version: 1, ForkedFrom: &orig.ID,
			CreatedBy: createdBy, CreatedAt: now, UpdatedAt: now}
		return s.insertWorkflow(ctx, tx, w)
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// SourceVersions answers, for each of orgID's installed workflows whose
// source still exists and was published, the source's latest published
// version (withdrawn or not): the server reports an update when it is
// newer than the copy's Source.Version.
func (s *Store) SourceVersions(ctx context.Context, orgID string) (map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT c.id, src.published_version FROM workflows c
		JOIN workflows src ON src.id = c.source_workflow_id
		WHERE c.org_id = ? AND src.published_version IS NOT NULL`), orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var v int
		if err := rows.Scan(&id, &v); err != nil {
			return nil, err
		}
		out[id] = v
	}
	return out, rows.Err()
}
