package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
)

// adminListOrgs serves GET /api/v1/admin/orgs: every organisation, newest
// first, searched by ?q= and paged.
func (s *Server) adminListOrgs(w http.ResponseWriter, r *http.Request) error {
	q, page, err := searchPageOf(r)
	if err != nil {
		return err
	}
	orgs, next, err := s.adminDB.Orgs(r.Context(), q, page)
	if err != nil {
		return err
	}
	return respondPage(w, orgs, next)
}

// adminOrgID is the organisation of an /admin/orgs/{id} route. Perch's own
// organisation, which authors the starter workflows (store.StarterOrgID),
// is not one an operator manages: it is left out of the lists and counts,
// and not found here either, so nothing can change its plan or its
// sign-in (docs/DESIGN.md, Administration).
func adminOrgID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if id == store.StarterOrgID {
		return "", perch.Errorf(perch.ENOTFOUND, "Organisation not found.")
	}
	return id, nil
}

// adminGetOrg serves GET /api/v1/admin/orgs/{id}.
func (s *Server) adminGetOrg(w http.ResponseWriter, r *http.Request) error {
	id, err := adminOrgID(r)
	if err != nil {
		return err
	}
	o, err := s.adminDB.AdminOrg(r.Context(), id)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, o)
}

// planStatuses are the statuses an admin may give an organisation's plan.
var planStatuses = []string{perch.PlanTrialing, perch.PlanActive, perch.PlanPastDue, perch.PlanCanceled, perch.PlanPaused, perch.PlanNone}

// adminUpdateOrg serves PATCH /api/v1/admin/orgs/{id}: an operator sets an
// organisation's plan, plan status or trial end (null clears it). Every
// problem is answered at once (422).
func (s *Server) adminUpdateOrg(w http.ResponseWriter, r *http.Request) error {
	id, err := adminOrgID(r)
	if err != nil {
		return err
	}
	var in struct {
		Plan        *string         `json:"plan"`
		Status      *string         `json:"status"`
		TrialEndsAt json.RawMessage `json:"trial_ends_at"` // absent, null or a time
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	upd := perch.AdminOrgUpdate{Plan: in.Plan, Status: in.Status}
	p := perch.Problems{}
	if in.TrialEndsAt != nil {
		upd.SetTrialEndsAt = true
		if string(in.TrialEndsAt) != "null" {
			var text string
			if err := json.Unmarshal(in.TrialEndsAt, &text); err != nil {
				return &perch.Error{Code: perch.EBADREQUEST, Message: `The field "trial_ends_at" must be a string or null.`,
					Fields: map[string]string{"trial_ends_at": "must be a string or null"}}
			}
			if t, err := time.Parse(time.RFC3339, text); err != nil {
				p.Add("trial_ends_at", "must be an RFC 3339 time, such as 2026-01-31T00:00:00Z, or null")
			} else {
				t = perch.Timestamp(t)
				upd.TrialEndsAt = &t
			}
		}
	}
	if in.Plan != nil {
		plans, err := s.adminDB.Plans(r.Context())
		if err != nil {
			return err
		}
		slugs := make([]string, len(plans))
		for i, pl := range plans {
			slugs[i] = pl.Slug
		}
		if !slices.Contains(slugs, *in.Plan) {
			p.Add("plan", "must be one of "+strings.Join(slugs, ", "))
		}
	}
	if in.Status != nil && !perch.ValidPlanStatus(*in.Status) {
		p.Add("status", "must be one of "+strings.Join(planStatuses, ", "))
	}
	if err := p.Err(); err != nil {
		return err
	}
	before, after, err := s.adminDB.UpdateOrgAsAdmin(r.Context(), id, upd)
	if err != nil {
		return err
	}
	changes := map[string]any{}
	fromTo := func(key string, from, to any) { changes[key] = map[string]any{"from": from, "to": to} }
	if before.Plan != after.Plan {
		fromTo("plan", before.Plan, after.Plan)
	}
	if before.Status != after.Status {
		fromTo("status", before.Status, after.Status)
	}
	if !sameTime(before.TrialEndsAt, after.TrialEndsAt) {
		fromTo("trial_ends_at", before.TrialEndsAt, after.TrialEndsAt)
	}
	if len(changes) > 0 {
		s.audit(r, perch.AuditEntry{Action: perch.AuditAdminOrgUpdated, Target: perch.AuditTarget{Type: "org", ID: after.ID},
			OrgID: after.ID, Changes: changes})
	}
	return respond(w, http.StatusOK, after)
}

// sameTime reports whether two optional times are both unset or equal.
func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// adminListPlans serves GET /api/v1/admin/plans: the plans, each with its
// subscribers (organisations on it in any status but canceled).
func (s *Server) adminListPlans(w http.ResponseWriter, r *http.Request) error {
	plans, err := s.adminDB.PlansWithSubscribers(r.Context())
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, plans)
}
