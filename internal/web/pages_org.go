package web

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/perch-dev/perch"
)

// orgData is what the Organisation page shows.
type orgData struct {
	Org         perch.Org
	Members     []*perch.Member
	Teams       []*perch.Team
	Invitations []*perch.Invitation
	Manage      bool   // an owner or admin: may change members, teams, invitations
	Owner       bool   // may grant and take the owner role
	SoleOwner   bool   // the only owner, who may not leave (the API refuses)
	InviteLink  string // the link of the invitation just sent, to pass on by hand
}

func (c *call) orgData() (*orgData, error) {
	data := &orgData{Manage: c.user.OrgRole == perch.RoleOwner || c.user.OrgRole == perch.RoleAdmin, Owner: c.user.OrgRole == perch.RoleOwner}
	if err := c.do(http.MethodGet, "/api/v1/org", nil, &data.Org); err != nil {
		return nil, err
	}
	if err := c.do(http.MethodGet, "/api/v1/org/members", nil, &data.Members); err != nil {
		return nil, err
	}
	if data.Owner {
		owners := 0
		for _, m := range data.Members {
			if m.Role == perch.RoleOwner {
				owners++
			}
		}
		data.SoleOwner = owners == 1
	}
	var teams []*perch.Team
	if err := c.do(http.MethodGet, "/api/v1/org/teams", nil, &teams); err != nil {
		return nil, err
	}
	for _, t := range teams { // with their members
		var full perch.Team
		if err := c.do(http.MethodGet, "/api/v1/org/teams/"+url.PathEscape(t.ID), nil, &full); err != nil {
			return nil, err
		}
		data.Teams = append(data.Teams, &full)
	}
	if data.Manage {
		if err := c.do(http.MethodGet, "/api/v1/org/invitations", nil, &data.Invitations); err != nil {
			return nil, err
		}
	}
	return data, nil
}

func (c *call) orgPage(status int, v view) error {
	data, err := c.orgData()
	if err != nil {
		return err
	}
	if link, ok := v.Data.(string); ok {
		data.InviteLink = link
	}
	v.Title, v.Nav, v.Data = "Organisation", "org", data
	c.render(status, "org", v)
	return nil
}

// Org shows the organisation: members and roles, teams, invitations.
func (d *Dashboard) Org(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.orgPage(http.StatusOK, view{})
}

// orgAction runs one change of the organisation from a form and comes back
// to the page, with the API's message when it refused.
func (c *call) orgAction(method, path string, in any, done string) error {
	if err := c.do(method, path, in, nil); err != nil {
		switch perch.ErrorCode(err) {
		case perch.EINTERNAL, perch.EUNAVAILABLE:
			return err
		}
		msg := perch.ErrorMessage(err)
		if f := fieldsText(err); f != "" {
			msg += " " + f
		}
		return c.orgPage(http.StatusBadRequest, view{Error: msg, Form: c.r.PostForm})
	}
	return c.redirect("/org", done)
}

// UpdateOrg renames the organisation.
func (d *Dashboard) UpdateOrg(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	return c.orgAction(http.MethodPatch, "/api/v1/org", map[string]string{"name": r.PostForm.Get("name")}, "The organisation is renamed.")
}

// SetMemberRole changes a member's role.
func (d *Dashboard) SetMemberRole(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	return c.orgAction(http.MethodPatch, "/api/v1/org/members/"+url.PathEscape(r.PathValue("userId")),
		map[string]string{"role": r.PostForm.Get("role")}, "The role is changed.")
}

// RemoveMember takes someone out of the organisation (or lets the user leave).
func (d *Dashboard) RemoveMember(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	done := "The member is removed."
	if r.PathValue("userId") == c.user.ID {
		done = "You left the organisation; you now have one of your own."
	}
	return c.orgAction(http.MethodDelete, "/api/v1/org/members/"+url.PathEscape(r.PathValue("userId")), nil, done)
}

// CreateTeam makes a team.
func (d *Dashboard) CreateTeam(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	in := map[string]string{"name": r.PostForm.Get("name"), "description": r.PostForm.Get("description")}
	return c.orgAction(http.MethodPost, "/api/v1/org/teams", in, "The team is created.")
}

// DeleteTeam deletes a team; its webhook tokens go with it.
func (d *Dashboard) DeleteTeam(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.orgAction(http.MethodDelete, "/api/v1/org/teams/"+url.PathEscape(r.PathValue("id")), nil, "The team is deleted.")
}

// AddTeamMember puts a member into a team.
func (d *Dashboard) AddTeamMember(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	return c.orgAction(http.MethodPut, "/api/v1/org/teams/"+url.PathEscape(r.PathValue("id"))+"/members/"+url.PathEscape(r.PostForm.Get("user_id")),
		nil, "Added to the team.")
}

// RemoveTeamMember takes a member out of a team.
func (d *Dashboard) RemoveTeamMember(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.orgAction(http.MethodDelete, "/api/v1/org/teams/"+url.PathEscape(r.PathValue("id"))+"/members/"+url.PathEscape(r.PathValue("userId")),
		nil, "Removed from the team.")
}

// Invite sends an invitation and shows its link, for passing on by hand.
func (d *Dashboard) Invite(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	in := map[string]string{"email": r.PostForm.Get("email"), "role": r.PostForm.Get("role")}
	var out struct {
		Email string `json:"email"`
		URL   string `json:"url"`
	}
	if err := c.do(http.MethodPost, "/api/v1/org/invitations", in, &out); err != nil {
		if perch.ErrorCode(err) == perch.EINTERNAL {
			return err
		}
		v := view{Error: perch.ErrorMessage(err), Form: c.r.PostForm}
		var pe *perch.Error
		if errors.As(err, &pe) {
			v.Fields = pe.Fields
		}
		return c.orgPage(http.StatusBadRequest, v)
	}
	return c.orgPage(http.StatusOK, view{Flash: c.invited(out.Email), Data: out.URL})
}

// RevokeInvitation withdraws a pending invitation.
func (d *Dashboard) RevokeInvitation(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.orgAction(http.MethodDelete, "/api/v1/org/invitations/"+url.PathEscape(r.PathValue("id")), nil, "The invitation is revoked.")
}

// invited says where the invitation to address went.
func (c *call) invited(address string) string {
	if c.outboxed() {
		return "Invitation made for " + address + ". " + outboxNote + " Or pass the link below on yourself."
	}
	return c.mailed("an invitation", address)
}
