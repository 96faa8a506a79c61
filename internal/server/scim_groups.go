package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/scim"
	"github.com/perch-dev/perch/internal/store"
)

// SCIM Groups (RFC 7643 §4.2) are the organisation's teams: Okta's "Push
// Groups" and Entra's group provisioning make, rename and fill them. A
// change of members has the effects of the dashboard's (teamMembersChanged
// in org_teams.go), audited with the SCIM token as the actor.

// scimGroupStore is what the SCIM Groups handlers need from storage.
type scimGroupStore interface {
	CreateSCIMGroup(ctx context.Context, orgID string, w store.SCIMGroupWrite) (*store.SCIMGroup, error)
	DeleteTeam(ctx context.Context, orgID, id string) error
	SCIMGroup(ctx context.Context, orgID, id string) (*store.SCIMGroup, error)
	SCIMGroups(ctx context.Context, orgID string, conds []store.SCIMGroupCondition, offset, limit int) ([]*store.SCIMGroup, int, error)
	UpdateSCIMGroup(ctx context.Context, orgID, id string, change func(*store.SCIMGroup) (store.SCIMGroupWrite, error)) (*store.SCIMGroupChange, error)
}

var _ scimGroupStore = (*store.Store)(nil)

// scimGroupOf is a team as SCIM shows it: each member by their id, shown
// by their name in Perch (their address when they have none).
func scimGroupOf(g *store.SCIMGroup) scim.Group {
	out := scim.Group{DisplayName: g.Name, ExternalID: g.ExternalID, Members: make([]scim.Member, len(g.Members))}
	for i, m := range g.Members {
		display := m.Name
		if display == "" {
			display = m.Email
		}
		out.Members[i] = scim.Member{Value: m.ID, Display: display}
	}
	return out
}

// scimGroupResource renders g with its location under this server.
func (s *Server) scimGroupResource(g *store.SCIMGroup, withMembers bool) scim.GroupResource {
	return scim.RenderGroup(scimGroupOf(g), g.ID, scim.Meta{Created: g.CreatedAt, LastModified: g.UpdatedAt,
		Location: s.scimBase() + "/Groups/" + g.ID}, s.scimBase()+"/Users", withMembers)
}

// answerGroup writes g with status, its ETag and, for a new group, its
// Location.
func (s *Server) answerGroup(w http.ResponseWriter, r *http.Request, status int, g *store.SCIMGroup) error {
	res := s.scimGroupResource(g, withMembers(r))
	w.Header().Set("ETag", res.Meta.Version)
	if status == http.StatusCreated {
		w.Header().Set("Location", res.Meta.Location)
	}
	return writeSCIM(w, status, res)
}

// withMembers reports whether the answer should list members: not when
// excludedAttributes names them (Entra's lookups), nor when attributes
// is given without them (RFC 7644 §3.4.2.5).
func withMembers(r *http.Request) bool {
	q := r.URL.Query()
	names := func(list string) bool {
		for name := range strings.SplitSeq(list, ",") {
			name = strings.TrimSpace(name)
			if strings.EqualFold(name, "members") || strings.EqualFold(name, scim.GroupSchema+":members") {
				return true
			}
		}
		return false
	}
	if names(q.Get("excludedAttributes")) {
		return false
	}
	return !q.Has("attributes") || names(q.Get("attributes"))
}

// groupIfMatch enforces the request's If-Match against the group as it
// stands: 412 when the identity provider's copy is out of date.
func groupIfMatch(r *http.Request, g *store.SCIMGroup) error {
	want := r.Header.Get("If-Match")
	if want == "" || want == "*" {
		return nil
	}
	etag := scim.GroupETag(scimGroupOf(g), g.ID)
	for tag := range strings.SplitSeq(want, ",") {
		if strings.TrimSpace(tag) == etag {
			return nil
		}
	}
	return scim.Errorf(http.StatusPreconditionFailed, "", "The group has changed since version %s; read it again.", want)
}

// scimGroupFilterable maps the attributes a filter of groups may compare
// to the store's fields.
var scimGroupFilterable = map[string]store.SCIMGroupField{
	"displayname": store.SCIMGroupName,
	"externalid":  store.SCIMGroupExternalID,
}

// scimGroupConditions parses a filter of groups into the store's conditions.
func scimGroupConditions(filter string) ([]store.SCIMGroupCondition, error) {
	f, err := scim.ParseFilter(filter)
	if err != nil {
		return nil, err
	}
	conds := make([]store.SCIMGroupCondition, 0, len(f))
	for _, cmp := range f {
		field, ok := scimGroupFilterable[strings.TrimPrefix(cmp.Attr, strings.ToLower(scim.GroupSchema)+":")]
		if !ok {
			return nil, scim.Errorf(http.StatusBadRequest, scim.InvalidFilter, "Perch filters groups by displayName and externalId; not by %q.", cmp.Attr)
		}
		v, ok := cmp.Value.(string)
		if !ok {
			return nil, scim.Errorf(http.StatusBadRequest, scim.InvalidFilter, "%s is compared with a string, not %v.", cmp.Attr, cmp.Value)
		}
		conds = append(conds, store.SCIMGroupCondition{Field: field, Value: v})
	}
	return conds, nil
}

// scimListGroups serves GET /Groups: the organisation's teams, filtered
// and paged as for Users.
func (s *Server) scimListGroups(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	q := r.URL.Query()
	start, err := scimInt(q.Get("startIndex"), 1, "startIndex")
	if err != nil {
		return err
	}
	count, err := scimInt(q.Get("count"), scimDefaultCount, "count")
	if err != nil {
		return err
	}
	start, count = max(start, 1), min(max(count, 0), scimMaxCount)
	var conds []store.SCIMGroupCondition
	if f := q.Get("filter"); f != "" {
		if conds, err = scimGroupConditions(f); err != nil {
			return err
		}
	}
	members := withMembers(r)
	groups, total, err := s.scimGroupDB.SCIMGroups(r.Context(), c.orgID, conds, start-1, count)
	if err != nil {
		return err
	}
	items := make([]scim.GroupResource, len(groups))
	for i, g := range groups {
		items[i] = s.scimGroupResource(g, members)
	}
	return writeSCIM(w, http.StatusOK, scim.NewList(total, start, items))
}

// scimGetGroup serves GET /Groups/{id}; 304 when If-None-Match holds its
// version.
func (s *Server) scimGetGroup(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	g, err := s.scimGroupDB.SCIMGroup(r.Context(), c.orgID, r.PathValue("id"))
	if err != nil {
		return err
	}
	version := scim.GroupETag(scimGroupOf(g), g.ID)
	if inm := r.Header.Get("If-None-Match"); inm != "" && (inm == "*" || strings.Contains(inm, version)) {
		w.Header().Set("ETag", version)
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	return s.answerGroup(w, r, http.StatusOK, g)
}

// scimGroupWrite turns a Group into what the store writes, its name and
// externalId checked as Perch checks a team's.
func scimGroupWrite(g scim.Group) (store.SCIMGroupWrite, error) {
	name := strings.TrimSpace(g.DisplayName)
	p := perch.Problems{}
	if perch.ValidateTeam(p, name, ""); p["name"] != "" {
		return store.SCIMGroupWrite{}, scim.Errorf(http.StatusBadRequest, scim.InvalidValue, "displayName %s.", p["name"])
	}
	if problem := perch.TextProblem(g.ExternalID, perch.SingleLine); problem != "" {
		return store.SCIMGroupWrite{}, scim.Errorf(http.StatusBadRequest, scim.InvalidValue, "externalId %s.", problem)
	}
	return store.SCIMGroupWrite{Name: name, ExternalID: g.ExternalID, Members: g.MemberIDs()}, nil
}

// scimCreateGroup serves POST /Groups: a new team with its members, who
// must all be users of the organisation (400 invalidValue naming the first
// who is not, and nothing is made).
func (s *Server) scimCreateGroup(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	body, err := scimBody(r)
	if err != nil {
		return err
	}
	g, err := scim.DecodeGroup(body)
	if err != nil {
		return err
	}
	write, err := scimGroupWrite(g)
	if err != nil {
		return err
	}
	made, err := s.scimGroupDB.CreateSCIMGroup(r.Context(), c.orgID, write)
	if err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditTeamCreated, Target: teamTarget(made.ID),
		Changes: map[string]any{"name": made.Name, "externalId": made.ExternalID}})
	s.teamMembersChanged(r, made.ID, made.MemberIDs(), nil)
	return s.answerGroup(w, r, http.StatusCreated, made)
}

// scimReplaceGroup serves PUT /Groups/{id}: the name, externalId and
// members become those sent (members absent: none).
func (s *Server) scimReplaceGroup(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	body, err := scimBody(r)
	if err != nil {
		return err
	}
	g, err := scim.DecodeGroup(body)
	if err != nil {
		return err
	}
	return s.scimUpdateGroup(w, r, c, func(*store.SCIMGroup) (scim.Group, error) { return g, nil })
}

// scimPatchGroup serves PATCH /Groups/{id}: Okta's and Entra's PatchOps.
func (s *Server) scimPatchGroup(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	body, err := scimBody(r)
	if err != nil {
		return err
	}
	return s.scimUpdateGroup(w, r, c, func(g *store.SCIMGroup) (scim.Group, error) { return scim.ApplyGroupPatch(scimGroupOf(g), body) })
}

// scimUpdateGroup changes the team to what change makes of it, in the
// store's transaction, and carries out what follows: a rename is audited,
// and each member who joined or left is as if added or removed in the
// dashboard.
func (s *Server) scimUpdateGroup(w http.ResponseWriter, r *http.Request, c *scimCall, change func(*store.SCIMGroup) (scim.Group, error)) error {
	ch, err := s.scimGroupDB.UpdateSCIMGroup(r.Context(), c.orgID, r.PathValue("id"), func(g *store.SCIMGroup) (store.SCIMGroupWrite, error) {
		if err := groupIfMatch(r, g); err != nil {
			return store.SCIMGroupWrite{}, err
		}
		next, err := change(g)
		if err != nil {
			return store.SCIMGroupWrite{}, err
		}
		return scimGroupWrite(next)
	})
	if err != nil {
		return err
	}
	before, after := ch.Before, ch.After
	changes := map[string]any{}
	if before.Name != after.Name {
		changes["name"] = map[string]any{"from": before.Name, "to": after.Name}
	}
	if before.ExternalID != after.ExternalID {
		changes["externalId"] = map[string]any{"from": before.ExternalID, "to": after.ExternalID}
	}
	if len(changes) > 0 {
		s.audit(r, perch.AuditEntry{Action: perch.AuditTeamUpdated, Target: teamTarget(after.ID), Changes: changes})
	}
	s.teamMembersChanged(r, after.ID, ch.Added, ch.Removed)
	return s.answerGroup(w, r, http.StatusOK, after)
}

// scimDeleteGroup serves DELETE /Groups/{id}: the team goes as if an owner
// deleted it in the dashboard; its members stay in the organisation.
func (s *Server) scimDeleteGroup(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	g, err := s.scimGroupDB.SCIMGroup(r.Context(), c.orgID, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := groupIfMatch(r, g); err != nil {
		return err
	}
	if err := s.scimGroupDB.DeleteTeam(r.Context(), c.orgID, g.ID); err != nil {
		return err
	}
	s.teamDeleted(r, g.ID, g.Name, g.MemberIDs())
	w.WriteHeader(http.StatusNoContent)
	return nil
}
