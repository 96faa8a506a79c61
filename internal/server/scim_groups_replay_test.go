package server

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

// The group replays play Okta's "Push Groups" and Entra's group
// provisioning against the real server, from two sets of requests of the
// same shapes: the project's own (internal/scim/testdata/requests) and,
// when they are here, the shared fixtures (../shared/fixtures/scim, as
// GROUPS.md lists them). The member pushed into the group is someone who
// joined in the dashboard, found by the provider and linked, with a
// WebSocket open: it reconnects to hear the team at each change.

// groupRequests names, per step, the file of each set of requests.
type groupRequests struct {
	dir   string            // where the files are
	files map[string]string // step → file name
}

func ownRequests() groupRequests {
	return groupRequests{dir: filepath.Join("..", "scim", "testdata", "requests"), files: map[string]string{
		"okta create": "okta/create_group.json", "okta rename": "okta/patch_group_rename.json",
		"okta add": "okta/patch_group_add_members.json", "okta remove": "okta/patch_group_remove_member.json",
		"okta put":     "okta/put_group.json",
		"entra create": "entra/create_group.json", "entra query": "entra/get_group_by_query.http.txt",
		"entra add": "entra/patch_group_add_member.json", "entra remove": "entra/patch_group_remove_member.json",
		"entra rename": "entra/patch_group_rename.json",
	}}
}

func sharedRequests(tb testing.TB) groupRequests {
	return groupRequests{dir: filepath.Join(testenv.FixturesDir(tb), "scim"), files: map[string]string{
		"okta create": "okta/create_group.request.json", "okta rename": "okta/patch_group_rename.request.json",
		"okta add": "okta/patch_group_add_members.request.json", "okta remove": "okta/patch_group_remove_member.request.json",
		"entra create": "entra/create_group.request.json", "entra query": "entra/get_group_by_query.request.http.txt",
		"entra add": "entra/patch_group_add_member.request.json", "entra remove": "entra/patch_group_remove_member.request.json",
	}}
}

// groupReplay is an organisation whose provider pushes groups, a member
// who joined in the dashboard (USER_ID) with a WebSocket open, and one the
// provider made (USER2_ID).
type groupReplay struct {
	t             *testing.T
	a             *api
	req           groupRequests
	idp           *scimIdP
	owner, member *account
	other         string
	sock          *wsConn
	dialMember    func() *wsConn
	vars          map[string]string
}

func newGroupReplay(t *testing.T, s *store.Store, req groupRequests, agent string) *groupReplay {
	a := newAPI(t, s)
	ts := a.live()
	owner := a.register("Olive Owner")
	member := a.invite(owner, "Rita Responder", "member")
	r := &groupReplay{t: t, a: a, req: req, owner: owner, member: member, idp: a.scimClient(owner, agent, "example.com")}
	// The provider finds the member who joined before it, by userName.
	found := r.idp.do("GET", "/scim/v2/Users?filter="+url.QueryEscape(`userName eq "`+member.Email+`"`), nil).want(t, 200)
	if lookup(found.Body, "Resources.0.id") != member.ID {
		t.Fatalf("the member by userName: %s", found.Raw)
	}
	r.other = r.idp.do("POST", "/scim/v2/Users", newUser("sam.standby@example.com")).want(t, 201).str("id")
	r.vars = map[string]string{"{{USER_ID}}": member.ID, "{{USER2_ID}}": r.other, "{{SCIM_TOKEN}}": r.idp.token}
	r.dialMember = func() *wsConn {
		c := dial(t, ts, member.Access, "")
		c.ready()
		return c
	}
	r.sock = r.dialMember()
	return r
}

// has reports whether the set of requests has step.
func (r *groupReplay) has(step string) bool { _, ok := r.req.files[step]; return ok }

// body reads the file of step with the placeholders filled in.
func (r *groupReplay) body(step string) []byte {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.req.dir, filepath.FromSlash(r.req.files[step])))
	if err != nil {
		r.t.Fatal(err)
	}
	s := string(b)
	for k, v := range r.vars {
		s = strings.ReplaceAll(s, k, v)
	}
	return []byte(s)
}

// value reads a member of step's JSON at a dotted path.
func (r *groupReplay) value(step, path string) any {
	r.t.Helper()
	var v any
	if err := json.Unmarshal(r.body(step), &v); err != nil {
		r.t.Fatalf("%s: %v", step, err)
	}
	return lookup(v, path)
}

// reconnected checks that the member's WebSocket moved to its new
// audience (1012) and opens a new one.
func (r *groupReplay) reconnected(after string) {
	r.t.Helper()
	if got := r.sock.closeStatus(); got != websocket.StatusServiceRestart {
		r.t.Fatalf("after %s the member's WebSocket closed with %v, want 1012", after, got)
	}
	r.sock = r.dialMember()
}

// hears checks whether the member's WebSocket receives a notification for
// the team.
func (r *groupReplay) hears(team string, want bool) {
	r.t.Helper()
	title := "for " + team
	r.a.post(r.a.webhookToken(r.owner, "team", team), title)
	r.a.post("", "sentinel")
	got := slices.Contains(r.sock.until("sentinel"), title)
	if got != want {
		r.t.Fatalf("the member heard the team: %v, want %v", got, want)
	}
}

// playOkta: create with a member, rename without a path, add members,
// remove one by a value filter, (PUT the membership), delete.
func playOkta(t *testing.T, s *store.Store, req groupRequests) {
	r := newGroupReplay(t, s, req, "Okta SCIM Client 1.0.0")
	made := r.idp.do("POST", "/scim/v2/Groups", r.body("okta create")).want(t, 201)
	id := made.str("id")
	r.vars["{{GROUP_ID}}"] = id
	if made.str("displayName") != r.value("okta create", "displayName") || !slices.Equal(memberIDs(made), []string{r.member.ID}) ||
		lookup(made.Body, "members.0.display") != "Rita Responder" {
		t.Fatalf("created %s", made.Raw)
	}
	r.reconnected("the group was made")
	r.hears(id, true)
	r.a.auditedBySCIM(r.owner.OrgID, perch.AuditTeamMemberAdded, id, map[string]any{"user_id": r.member.ID})

	renamed := r.idp.do("PATCH", "/scim/v2/Groups/"+id, r.body("okta rename")).want(t, 200)
	if renamed.str("displayName") != r.value("okta rename", "Operations.0.value.displayName") || !slices.Equal(memberIDs(renamed), []string{r.member.ID}) {
		t.Fatalf("renamed %s", renamed.Raw)
	}
	r.a.auditedBySCIM(r.owner.OrgID, perch.AuditTeamUpdated, id, nil)

	added := r.idp.do("PATCH", "/scim/v2/Groups/"+id, r.body("okta add")).want(t, 200)
	want := sorted(r.member.ID)
	if strings.Contains(string(r.body("okta add")), r.other) {
		want = sorted(r.member.ID, r.other)
	}
	if !slices.Equal(memberIDs(added), want) {
		t.Fatalf("after the add %s", added.Raw)
	}

	removed := r.idp.do("PATCH", "/scim/v2/Groups/"+id, r.body("okta remove")).want(t, 200)
	if slices.Contains(memberIDs(removed), r.member.ID) {
		t.Fatalf("after the removal %s", removed.Raw)
	}
	r.reconnected("the removal")
	r.hears(id, false)
	r.a.auditedBySCIM(r.owner.OrgID, perch.AuditTeamMemberRemoved, id, map[string]any{"user_id": r.member.ID})

	if r.has("okta put") {
		put := r.idp.do("PUT", "/scim/v2/Groups/"+id, r.body("okta put")).want(t, 200)
		if !slices.Equal(memberIDs(put), []string{r.other}) || put.str("displayName") != r.value("okta put", "displayName") {
			t.Fatalf("after the PUT %s", put.Raw)
		}
	}
	r.idp.do("DELETE", "/scim/v2/Groups/"+id, nil).want(t, 204)
	r.idp.do("GET", "/scim/v2/Groups/"+id, nil).want(t, 404)
	r.a.auditedBySCIM(r.owner.OrgID, perch.AuditTeamDeleted, id, nil)
}

// playEntra: create with externalId and no members, find it by
// displayName without members, add a member, remove them, (rename by path).
func playEntra(t *testing.T, s *store.Store, req groupRequests) {
	r := newGroupReplay(t, s, req, "Azure AD SCIM Provisioning")
	made := r.idp.do("POST", "/scim/v2/Groups", r.body("entra create")).want(t, 201)
	id := made.str("id")
	r.vars["{{GROUP_ID}}"] = id
	if made.str("externalId") != r.value("entra create", "externalId") || made.Body["members"] != nil || made.str("meta.resourceType") != "Group" {
		t.Fatalf("created %s", made.Raw)
	}

	found := r.idp.do("GET", recordedPath(t, r.body("entra query")), nil).want(t, 200)
	if found.Body["totalResults"] != 1.0 || lookup(found.Body, "Resources.0.id") != id || lookup(found.Body, "Resources.0.members") != nil {
		t.Fatalf("the query: %s", found.Raw)
	}

	added := r.idp.do("PATCH", "/scim/v2/Groups/"+id, r.body("entra add")).want(t, 200)
	if !slices.Equal(memberIDs(added), []string{r.member.ID}) {
		t.Fatalf("after the add %s", added.Raw)
	}
	r.reconnected("the add")
	r.hears(id, true)
	r.a.auditedBySCIM(r.owner.OrgID, perch.AuditTeamMemberAdded, id, map[string]any{"user_id": r.member.ID})

	removed := r.idp.do("PATCH", "/scim/v2/Groups/"+id, r.body("entra remove")).want(t, 200)
	if removed.Body["members"] != nil {
		t.Fatalf("after the removal %s", removed.Raw)
	}
	r.reconnected("the removal")
	r.hears(id, false)
	r.a.auditedBySCIM(r.owner.OrgID, perch.AuditTeamMemberRemoved, id, map[string]any{"user_id": r.member.ID})
	// The same removal again changes nothing: the provider's wish holds.
	r.idp.do("PATCH", "/scim/v2/Groups/"+id, r.body("entra remove")).want(t, 200)

	if r.has("entra rename") {
		renamed := r.idp.do("PATCH", "/scim/v2/Groups/"+id, r.body("entra rename")).want(t, 200)
		if renamed.str("displayName") != r.value("entra rename", "Operations.0.value") {
			t.Fatalf("renamed %s", renamed.Raw)
		}
	}
}

// TestSCIMGroupReplay plays the project's own requests.
func TestSCIMGroupReplay(t *testing.T) {
	t.Parallel()
	t.Run("okta", func(t *testing.T) {
		t.Parallel()
		storetest.Run(t, func(t *testing.T, s *store.Store) { playOkta(t, s, ownRequests()) })
	})
	t.Run("entra", func(t *testing.T) {
		t.Parallel()
		storetest.Run(t, func(t *testing.T, s *store.Store) { playEntra(t, s, ownRequests()) })
	})
}

// TestSCIMFixtureReplayGroups plays the shared fixtures GROUPS.md lists.
func TestSCIMFixtureReplayGroups(t *testing.T) {
	t.Parallel()
	req := sharedRequests(t)
	t.Run("okta", func(t *testing.T) {
		t.Parallel()
		storetest.Run(t, func(t *testing.T, s *store.Store) { playOkta(t, s, req) })
	})
	t.Run("entra", func(t *testing.T) {
		t.Parallel()
		storetest.Run(t, func(t *testing.T, s *store.Store) { playEntra(t, s, req) })
	})
}

// recordedPath reads the path of a recorded request whose first line may
// lack the protocol version, as Entra's documentation writes them.
func recordedPath(t *testing.T, raw []byte) string {
	first, rest, _ := strings.Cut(string(raw), "\n")
	if fields := strings.Fields(first); len(fields) == 2 {
		first = strings.Join(fields, " ") + " HTTP/1.1"
	}
	return oktaRequestPath(t, []byte(first+"\n"+rest))
}
