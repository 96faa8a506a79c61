package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/scim"
	"github.com/perch-dev/perch/internal/store"
)

// scimStore is what the SCIM handlers need from storage: the bearer token's
// organisation and the users its provider keeps.
type scimStore interface {
	CreateSCIMUser(ctx context.Context, orgID string, w store.SCIMWrite) (*store.SCIMUser, error)
	DeleteSCIMUser(ctx context.Context, orgID, userID string, check func(*store.SCIMUser) error) (*store.SCIMChange, error)
	RestoreSCIMUser(ctx context.Context, orgID string, w store.SCIMWrite, change func(*store.SCIMUser) (store.SCIMWrite, error)) (*store.SCIMChange, error)
	SCIMTokenOrg(ctx context.Context, hash string) (string, error)
	SCIMUser(ctx context.Context, orgID, userID string) (*store.SCIMUser, error)
	SCIMUsers(ctx context.Context, orgID string, conds []store.SCIMCondition, offset, limit int) ([]*store.SCIMUser, int, error)
	UpdateSCIMUser(ctx context.Context, orgID, userID string, change func(*store.SCIMUser) (store.SCIMWrite, error)) (*store.SCIMChange, error)
}

var _ scimStore = (*store.Store)(nil)

// kept is what the store keeps of a SCIM user beyond the account's own
// columns: the attributes answered back to the identity provider.
type kept struct {
	Name        scim.Name    `json:"name"`
	DisplayName string       `json:"displayName,omitempty"`
	Emails      []scim.Email `json:"emails,omitempty"`
	Title       string       `json:"title,omitempty"`
	Enterprise  keptProfile  `json:"enterprise,omitzero"`
}

// scimUserOf is a member as SCIM shows them. A member the identity
// provider has not written yet is their account: userName and the one
// e-mail are its address. The account's address is always among the
// e-mails, as the primary one: a member may have changed it in Perch.
func scimUserOf(su *store.SCIMUser) scim.User {
	u := scim.User{UserName: su.UserName, ExternalID: su.ExternalID, Active: !su.Disabled, Role: su.Role}
	var k kept
	if su.Linked && json.Unmarshal([]byte(su.Attributes), &k) == nil {
		u.Name, u.DisplayName, u.Emails = k.Name, k.DisplayName, k.Emails
		u.Title, u.Enterprise = k.Title, scim.Enterprise(k.Enterprise)
	} else {
		u.Name, u.DisplayName = scim.Name{Formatted: su.Name}, su.Name
	}
	if len(u.Emails) == 0 || !strings.EqualFold(u.Email(), su.Email) {
		u.Emails = append([]scim.Email{{Value: su.Email, Type: "work", Primary: true}}, unprimary(u.Emails)...)
	}
	return u
}

// unprimary is emails with none of them primary.
func unprimary(emails []scim.Email) []scim.Email {
	out := make([]scim.Email, len(emails))
	for i, e := range emails {
		e.Primary = false
		out[i] = e
	}
	return out
}

// scimWrite turns what the identity provider sent into what the store
// writes: the account's address (the primary e-mail, or userName when it
// is one) and name, each checked as Perch checks its own.
func scimWrite(u scim.User) (store.SCIMWrite, error) {
	bad := func(attr, problem string) error {
		return scim.Errorf(http.StatusBadRequest, scim.InvalidValue, "%s %s.", attr, problem)
	}
	email := u.Email()
	if email == "" {
		return store.SCIMWrite{}, bad("emails", "must hold an address (or userName be one): Perch accounts are known by their e-mail address")
	}
	p := perch.Problems{}
	perch.ValidateEmail(p, email)
	if problem, ok := p["email"]; ok {
		return store.SCIMWrite{}, bad(fmt.Sprintf("The address %q", email), problem)
	}
	// In the User schema's order, not a map's: the first bad attribute named
	// must be the same on every try of the same request.
	for _, a := range [...]struct{ attr, v string }{{"userName", u.UserName}, {"externalId", u.ExternalID}, {"displayName", u.DisplayName},
		{"name.formatted", u.Name.Formatted}, {"name.givenName", u.Name.GivenName}, {"name.familyName", u.Name.FamilyName},
		{"name.middleName", u.Name.MiddleName}, {"name.honorificPrefix", u.Name.HonorificPrefix}, {"name.honorificSuffix", u.Name.HonorificSuffix}} {
		if problem := perch.TextProblem(a.v, perch.SingleLine); problem != "" {
			return store.SCIMWrite{}, bad(a.attr, problem)
		}
	}
	for _, e := range u.Emails {
		if problem := perch.TextProblem(e.Value+e.Type+e.Display, perch.SingleLine); problem != "" {
			return store.SCIMWrite{}, bad("emails", problem)
		}
	}
	if err := checkProfile(u); err != nil {
		return store.SCIMWrite{}, err
	}
	attrs, err := json.Marshal(kept{Name: u.Name, DisplayName: u.DisplayName, Emails: u.Emails,
		Title: u.Title, Enterprise: keptProfile(u.Enterprise)})
	if err != nil {
		return store.SCIMWrite{}, err
	}
	return store.SCIMWrite{Email: email, Name: accountName(u), UserName: u.UserName, ExternalID: u.ExternalID,
		Attributes: string(attrs), Active: u.Active, Role: u.Role}, nil
}

// accountName is the member's name in Perch, cut to Perch's limit: a
// provider's long name is no reason to refuse the person.
func accountName(u scim.User) string {
	name := strings.TrimSpace(u.AccountName())
	if utf8.RuneCountInString(name) > perch.MaxNameLen {
		name = strings.TrimSpace(string([]rune(name)[:perch.MaxNameLen]))
	}
	return name
}

// scimResource renders su with its location under this server.
func (s *Server) scimResource(su *store.SCIMUser) scim.Resource {
	return scim.Render(scimUserOf(su), su.ID, scim.Meta{Created: su.CreatedAt, LastModified: su.UpdatedAt,
		Location: s.scimBase() + "/Users/" + su.ID})
}

// answerUser writes su with status, its ETag and, for a new user, its
// Location.
func (s *Server) answerUser(w http.ResponseWriter, status int, su *store.SCIMUser) error {
	res := s.scimResource(su)
	w.Header().Set("ETag", res.Meta.Version)
	if status == http.StatusCreated {
		w.Header().Set("Location", res.Meta.Location)
	}
	return writeSCIM(w, status, res)
}

// ifMatch enforces the request's If-Match against the member as they
// stand: 412 when the identity provider's copy is out of date.
func ifMatch(r *http.Request, su *store.SCIMUser) error {
	want := r.Header.Get("If-Match")
	if want == "" || want == "*" {
		return nil
	}
	etag := scim.ETag(scimUserOf(su), su.ID)
	for tag := range strings.SplitSeq(want, ",") {
		if strings.TrimSpace(tag) == etag {
			return nil
		}
	}
	return scim.Errorf(http.StatusPreconditionFailed, "", "The user has changed since version %s; read it again.", want)
}

// scimListUsers serves GET /Users: the organisation's members, filtered
// and paged as RFC 7644 §3.4.2 says.
func (s *Server) scimListUsers(w http.ResponseWriter, r *http.Request, c *scimCall) error {
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
	var conds []store.SCIMCondition
	if f := q.Get("filter"); f != "" {
		if conds, err = scimConditions(f); err != nil {
			return err
		}
	}
	users, total, err := s.scimDB.SCIMUsers(r.Context(), c.orgID, conds, start-1, count)
	if err != nil {
		return err
	}
	items := make([]scim.Resource, len(users))
	for i, su := range users {
		items[i] = s.scimResource(su)
	}
	return writeSCIM(w, http.StatusOK, scim.NewList(total, start, items))
}

// scimInt reads a list parameter, def when absent.
func scimInt(v string, def int, name string) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, scim.Errorf(http.StatusBadRequest, scim.InvalidValue, "%s must be a whole number.", name)
	}
	return n, nil
}

// scimFilterable maps the attributes a filter may compare to the store's
// fields.
var scimFilterable = map[string]store.SCIMFilterField{
	"username":     store.SCIMUserName,
	"externalid":   store.SCIMExternalID,
	"emails.value": store.SCIMEmail,
	"emails":       store.SCIMEmail, // `emails eq "…"` compares the value (RFC 7644 §3.4.2.2)
	"active":       store.SCIMActive,
}

// scimConditions parses a list filter into the store's conditions.
func scimConditions(filter string) ([]store.SCIMCondition, error) {
	f, err := scim.ParseFilter(filter)
	if err != nil {
		return nil, err
	}
	conds := make([]store.SCIMCondition, 0, len(f))
	for _, cmp := range f {
		field, ok := scimFilterable[cmp.Attr]
		if !ok {
			return nil, scim.Errorf(http.StatusBadRequest, scim.InvalidFilter,
				"Perch filters users by userName, externalId, emails.value and active; not by %q.", cmp.Attr)
		}
		cond := store.SCIMCondition{Field: field}
		switch v := cmp.Value.(type) {
		case string:
			cond.String = v
			if field == store.SCIMActive {
				b, err := strconv.ParseBool(strings.ToLower(v))
				if err != nil {
					return nil, scim.Errorf(http.StatusBadRequest, scim.InvalidFilter, "active is compared with true or false.")
				}
				cond.Bool = b
			}
		case bool:
			if field != store.SCIMActive {
				return nil, scim.Errorf(http.StatusBadRequest, scim.InvalidFilter, "%s is compared with a string.", cmp.Attr)
			}
			cond.Bool = v
		default:
			return nil, scim.Errorf(http.StatusBadRequest, scim.InvalidFilter, "%s is compared with a string or a boolean, not %v.", cmp.Attr, cmp.Value)
		}
		conds = append(conds, cond)
	}
	return conds, nil
}

// scimGetUser serves GET /Users/{id}; 304 when If-None-Match holds its
// version.
func (s *Server) scimGetUser(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	su, err := s.scimDB.SCIMUser(r.Context(), c.orgID, r.PathValue("id"))
	if err != nil {
		return err
	}
	res := s.scimResource(su)
	if inm := r.Header.Get("If-None-Match"); inm != "" && (inm == "*" || strings.Contains(inm, res.Meta.Version)) {
		w.Header().Set("ETag", res.Meta.Version)
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	return s.answerUser(w, http.StatusOK, su)
}

// scimCreateUser serves POST /Users: a new account in the organisation,
// a member, who signs in through its single sign-on; or, when the
// organisation's identity provider deleted that member before, the same
// account restored.
func (s *Server) scimCreateUser(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	u, err := decodeSCIMUser(r)
	if err != nil {
		return err
	}
	write, err := scimWrite(u)
	if err != nil {
		return err
	}
	if restored, err := s.scimRestore(w, r, c, write); restored || err != nil {
		return err // a member SCIM deleted is back (scim_deprovision.go)
	}
	if err := s.idpMayCreate(r.Context(), c.orgID, write.Email); err != nil {
		s.scimRefused(r, c, "", write.Email, err)
		return err
	}
	su, err := s.scimDB.CreateSCIMUser(r.Context(), c.orgID, write)
	if err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditSCIMUserCreated, Actor: c.actor, OrgID: c.orgID, Target: userTarget(su.ID),
		Changes: map[string]any{"email": su.Email, "userName": su.UserName, "externalId": su.ExternalID, "active": !su.Disabled, "role": su.Role}})
	return s.answerUser(w, http.StatusCreated, su)
}

// decodeSCIMUser reads the User of a POST or PUT.
func decodeSCIMUser(r *http.Request) (scim.User, error) {
	body, err := scimBody(r)
	if err != nil {
		return scim.User{}, err
	}
	return scim.DecodeUser(body)
}

// scimReplaceUser serves PUT /Users/{id}: the member's attributes become
// those sent.
func (s *Server) scimReplaceUser(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	u, err := decodeSCIMUser(r)
	if err != nil {
		return err
	}
	return s.scimUpdate(w, r, c, func(*store.SCIMUser) (scim.User, error) { return u, nil })
}

// scimPatchUser serves PATCH /Users/{id}: Okta's and Entra's PatchOps.
func (s *Server) scimPatchUser(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	body, err := scimBody(r)
	if err != nil {
		return err
	}
	return s.scimUpdate(w, r, c, func(su *store.SCIMUser) (scim.User, error) { return scim.ApplyPatch(scimUserOf(su), body) })
}

// scimUpdate changes the member to what change makes of them, in the
// store's transaction, and carries out what follows: a deactivation closes
// their WebSockets on every instance and stops their webhook tokens, as a
// platform admin's disable does (userDisabled); the
// change is audited. A platform admin, or a new address outside the
// organisation's verified domains, is refused (and audited).
func (s *Server) scimUpdate(w http.ResponseWriter, r *http.Request, c *scimCall, change func(*store.SCIMUser) (scim.User, error)) error {
	var refused *store.SCIMUser
	ch, err := s.scimDB.UpdateSCIMUser(r.Context(), c.orgID, r.PathValue("id"), func(su *store.SCIMUser) (store.SCIMWrite, error) {
		if err := s.idpMayManage(scimAccount(su)); err != nil {
			refused = su
			return store.SCIMWrite{}, err
		}
		if err := ifMatch(r, su); err != nil {
			return store.SCIMWrite{}, err
		}
		u, err := change(su)
		if err != nil {
			return store.SCIMWrite{}, err
		}
		write, err := scimWrite(u)
		if err != nil {
			return store.SCIMWrite{}, err
		}
		if perch.NormalizeEmail(write.Email) != perch.NormalizeEmail(su.Email) {
			if err := s.idpMayCreate(r.Context(), c.orgID, write.Email); err != nil {
				refused = su
				return store.SCIMWrite{}, err
			}
		}
		return write, nil
	})
	if err != nil {
		if refused != nil {
			s.scimRefused(r, c, refused.ID, refused.Email, err)
		}
		return err
	}
	before, after := ch.Before, ch.After
	s.scimActiveChanged(r.Context(), ch)
	if !strings.EqualFold(before.Email, after.Email) {
		s.syncListedAdmin(r, after.ID) // a new address is asserted, not proven
	}
	if before.Role != after.Role {
		if err := s.roleChanged(r, c.orgID, after.ID, after.Email, before.Role, after.Role); err != nil {
			return err
		}
	}
	changes := map[string]any{}
	for k, pair := range map[string][2]string{"email": {before.Email, after.Email}, "name": {before.Name, after.Name},
		"userName": {before.UserName, after.UserName}, "externalId": {before.ExternalID, after.ExternalID}} {
		if pair[0] != pair[1] {
			changes[k] = pair[1]
		}
	}
	action := perch.AuditSCIMUserUpdated
	if before.Disabled != after.Disabled {
		changes["active"] = !after.Disabled
		action = perch.AuditSCIMUserReactivated
		if after.Disabled {
			action = perch.AuditSCIMUserDeactivated
		}
	}
	if len(changes) > 0 || before.Attributes != after.Attributes {
		s.audit(r, perch.AuditEntry{Action: action, Actor: c.actor, OrgID: c.orgID, Target: userTarget(after.ID), Changes: changes})
	}
	return s.answerUser(w, http.StatusOK, after)
}

// scimAccount is the account of a SCIM user, as far as who is a platform
// admin goes.
func scimAccount(su *store.SCIMUser) *perch.User {
	return &perch.User{ID: su.ID, Email: su.Email, EmailVerified: su.EmailVerified, IsAdmin: su.Granted}
}

// scimRefused audits what the organisation's identity provider was refused:
// a change to the account targetID ("" for one it asked to create) at
// email, and why.
func (s *Server) scimRefused(r *http.Request, c *scimCall, targetID, email string, err error) {
	s.audit(r, perch.AuditEntry{Action: perch.AuditSCIMRefused, Actor: c.actor, OrgID: c.orgID, Target: userTarget(targetID),
		Changes: map[string]any{"email": email, "method": r.Method, "reason": perch.ErrorMessage(err)}})
}
