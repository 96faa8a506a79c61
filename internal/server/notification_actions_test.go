package server

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/netguard"
	"github.com/perch-dev/perch/internal/pagerduty/pagerdutyfake"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/worker"
)

// storeNotification stores n as the ingest writer stores a delivery's,
// and publishes it.
func (a *api) storeNotification(n perch.Notification) perch.Notification {
	a.t.Helper()
	stored, err := a.srv.ingest.Write(a.t.Context(), store.NewNotification{Notification: n})
	if err != nil {
		a.t.Fatal(err)
	}
	return stored[0].Notification
}

// sealAction seals req as the receiver seals an http action's request.
func (a *api) sealAction(req perch.ActionRequest) string {
	a.t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		a.t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(a.srv.opts.Secrets.Seal(b))
}

// mustJSON is v as JSON text.
func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// httpAction is an http action whose request is sealed.
func (a *api) httpAction(id, label string, req perch.ActionRequest) perch.NotificationAction {
	return perch.NotificationAction{ID: id, Type: perch.ActionHTTP, Label: label, Sealed: a.sealAction(req)}
}

// orgNote is a notification to acc's organisation carrying actions.
func orgNote(acc *account, title string, actions ...perch.NotificationAction) perch.Notification {
	return perch.Notification{Tab: "Deploys", Title: title, Severity: perch.SeverityInfo, Source: perch.SourceInbound,
		Scope: perch.Scope{Type: perch.ScopeOrg, ID: acc.OrgID}, Actions: actions}
}

// runAction runs action actionID of notification id as the holder of token.
func (a *api) runAction(token, id, actionID string) *response {
	a.t.Helper()
	return a.call("POST", "/api/v1/notifications/"+id+"/actions/"+actionID, token, nil)
}

// actionTarget is a loopback receiver of http actions that records what it
// was sent and answers status.
type actionTarget struct {
	*httptest.Server
	mu  sync.Mutex
	got []*http.Request
	raw [][]byte
}

func newActionTarget(t *testing.T, status int) *actionTarget {
	at := &actionTarget{}
	at.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		at.mu.Lock()
		at.got, at.raw = append(at.got, r), append(at.raw, body)
		at.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, strings.Repeat("x", 100<<10)) // more than Perch reads
	}))
	t.Cleanup(at.Close)
	return at
}

func (at *actionTarget) requests() ([]*http.Request, [][]byte) {
	at.mu.Lock()
	defer at.mu.Unlock()
	return append([]*http.Request(nil), at.got...), append([][]byte(nil), at.raw...)
}

// auditOf is the organisation's entries of action, newest first.
func (a *api) auditOf(orgID, action string) []*perch.AuditEntry {
	a.t.Helper()
	list, _, err := a.store.AuditLog(a.t.Context(), perch.AuditFilter{OrgID: orgID, Action: action, Page: perch.Page{Limit: 50}})
	if err != nil {
		a.t.Fatal(err)
	}
	return list
}

// TestHTTPActionIsSentSignedAndNeverShown: a member runs an http action;
// the loopback target (private targets allowed, as for workflow forwards)
// gets the sender's method, headers and body, signed with the
// organisation's action signing secret; the answer reports the target's
// status; the header's secret value and the target's address appear in no
// answer, frame, audit entry or log line.
func TestHTTPActionIsSentSignedAndNeverShown(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		a.setWorker(func(o *worker.Options) { o.AllowPrivate = true })
		owner := a.register("Ada")
		member := a.invite(owner, "Bob", "member")
		target := newActionTarget(t, http.StatusAccepted)
		const secretHeader = "Bearer deploy-secret-7f3a"
		body := `{"approve":true,"note":"from-perch"}`
		ts := a.live()
		ws := dial(t, ts, member.Access, "")
		ws.ready()

		// The sender's delivery, through the inbound receiver, which seals
		// the request.
		hook := a.webhookToken(owner, "org", "")
		ids := a.whOK("/webhooks/inbound", hook, mustJSON(t, map[string]any{"title": "Deploy 42 waits", "actions": []any{
			map[string]any{"type": "view", "label": "Open", "url": "https://example.com/deploys/42"},
			map[string]any{"type": "http", "label": "Approve", "url": target.URL + "/deploys/42?key=q-secret", "method": "PUT",
				"headers": map[string]string{"Authorization": secretHeader, "X-Custom": "c1"}, "body": body},
		}})).IDs
		n := perch.Notification{ID: ids[0]}
		f := ws.next()
		if f.Type != "notification" {
			t.Fatalf("frame %s %s", f.Type, f.Data)
		}
		leaks := []string{secretHeader, "deploy-secret", target.URL, strings.TrimPrefix(target.URL, "http://"), "q-secret", "from-perch", "X-Custom", `"PUT"`}
		noLeak := func(where, text string) {
			t.Helper()
			for _, l := range leaks {
				if strings.Contains(text, l) {
					t.Errorf("%s shows %q: %s", where, l, text)
				}
			}
		}
		noLeak("the frame", string(f.Data))
		if got := f.notification(t); len(got.Actions) != 2 || got.Actions[1].ID != "a2" || got.Actions[1].Type != "http" || got.Actions[1].Label != "Approve" {
			t.Fatalf("frame actions %+v", got.Actions)
		}

		res := expect(t, a.runAction(member.Access, n.ID, "a2"), 200)
		if d := res.Data(); d["status"] != float64(202) || d["ok"] != true {
			t.Fatalf("answer %s, want status 202 and ok", res.Raw)
		}
		noLeak("the action's answer", res.Raw)
		noLeak("the history", a.call("GET", "/api/v1/notifications", member.Access, nil).Raw)

		reqs, raws := target.requests()
		if len(reqs) != 1 {
			t.Fatalf("the target got %d requests, want 1", len(reqs))
		}
		r := reqs[0]
		if r.Method != "PUT" || r.URL.Path != "/deploys/42" || r.URL.Query().Get("key") != "q-secret" || string(raws[0]) != body ||
			r.Header.Get("Authorization") != secretHeader || r.Header.Get("X-Custom") != "c1" {
			t.Errorf("the target got %s %s %v %q", r.Method, r.URL, r.Header, raws[0])
		}
		if r.Header.Get("X-Perch-Notification") != n.ID || r.Header.Get("X-Perch-Action") != "a2" {
			t.Errorf("Perch's headers: %v", r.Header)
		}
		signing := expect(t, a.call("GET", "/api/v1/org/integrations/actions", owner.Access, nil), 200).Data()
		secret := signing["signing_secret"].(string)
		if err := netguard.Verify(secret, r.Header.Get("X-Perch-Signature"), raws[0], a.clock.Now(), 5*time.Minute); err != nil {
			t.Errorf("signature %q does not verify with the organisation's secret: %v", r.Header.Get("X-Perch-Signature"), err)
		}
		if err := netguard.Verify(secret, r.Header.Get("X-Perch-Signature"), []byte(body+" "), a.clock.Now(), 5*time.Minute); err == nil {
			t.Error("the signature verifies another body")
		}
		// Another organisation signs with another secret.
		other := a.register("Eve")
		if s2 := expect(t, a.call("GET", "/api/v1/org/integrations/actions", other.Access, nil), 200).Data()["signing_secret"]; s2 == secret {
			t.Error("two organisations share a signing secret")
		}

		entries := a.auditOf(owner.OrgID, perch.AuditNotificationAction)
		if len(entries) != 1 {
			t.Fatalf("%d audit entries, want 1", len(entries))
		}
		e := entries[0]
		if e.Actor.ID != member.ID || e.Target.Type != "notification" || e.Target.ID != n.ID || e.Changes["action_id"] != "a2" ||
			e.Changes["label"] != "Approve" || e.Changes["outcome"] != "done" || e.Changes["status"] != float64(202) {
			t.Errorf("audit entry %+v", e)
		}
		raw, _ := json.Marshal(e)
		noLeak("the audit entry", string(raw))
		noLeak("the log", a.logs.String())

		// A target that answers 500: reported, not an error.
		failing := newActionTarget(t, http.StatusInternalServerError)
		n2 := a.storeNotification(orgNote(owner, "Deploy 43 waits", a.httpAction("a1", "Approve", perch.ActionRequest{Method: "POST", URL: failing.URL})))
		if d := expect(t, a.runAction(owner.Access, n2.ID, "a1"), 200).Data(); d["status"] != float64(500) || d["ok"] != false {
			t.Errorf("a failing target: %v", d)
		}
		if e := a.auditOf(owner.OrgID, perch.AuditNotificationAction)[0]; e.Changes["outcome"] != "failed" || e.Changes["status"] != float64(500) {
			t.Errorf("audit of a failure %+v", e.Changes)
		}
	})
}

// TestHTTPActionPrivateTargetRefused: with private targets not allowed
// (the default), an action whose host is a loopback spelling or resolves
// to a private or metadata address is refused before any dial: 422 saying
// what the address is, never which; audited as refused. Nothing here is
// dialled: the stub resolver answers, and the guard refuses first.
func TestHTTPActionPrivateTargetRefused(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		a.setWorker(func(o *worker.Options) {
			o.Resolver = stubResolver{"hooks.internal.test": "10.1.2.3", "metadata.test": "169.254.169.254"}
		})
		owner := a.register("Ada")
		for _, c := range []struct{ url, why string }{
			{"http://0x7f.1:8080/hook", "loopback"},
			{"http://[::ffff:127.0.0.1]/hook", "loopback"},
			{"http://hooks.internal.test/approve", "private"},
			{"https://metadata.test/latest", "metadata"},
		} {
			n := a.storeNotification(orgNote(owner, "Refused", a.httpAction("a1", "Go", perch.ActionRequest{Method: "POST", URL: c.url})))
			res := expect(t, a.runAction(owner.Access, n.ID, "a1"), 422)
			if f := res.Fields(); !strings.Contains(fmt.Sprint(f["url"]), c.why) {
				t.Errorf("%s: fields %v, want the url refused as %s", c.url, f, c.why)
			}
			for _, l := range []string{"0x7f", "hooks.internal", "metadata.test", "10.1.2.3", "169.254", "127.0.0.1"} {
				if strings.Contains(res.Raw, l) {
					t.Errorf("%s: the answer names %q: %s", c.url, l, res.Raw)
				}
			}
			if e := a.auditOf(owner.OrgID, perch.AuditNotificationAction)[0]; e.Changes["outcome"] != "refused" {
				t.Errorf("%s: audit %+v", c.url, e.Changes)
			}
		}
		// A spelling the receiver's check of IP literals takes for a name
		// is stored, and refused when it runs.
		hook := a.webhookToken(owner, "org", "")
		id := a.whOK("/webhooks/inbound", hook, mustJSON(t, map[string]any{"title": "Spelled", "actions": []any{
			map[string]any{"type": "http", "label": "Go", "url": "http://0x7f.1:8080/hook"}}})).IDs[0]
		if f := expect(t, a.runAction(owner.Access, id, "a1"), 422).Fields(); !strings.Contains(fmt.Sprint(f["url"]), "loopback") {
			t.Errorf("through the receiver: fields %v", f)
		}
	})
}

// TestActionLookups: an action is found only on a notification its caller
// sees; a view action has nothing to run; an unreachable target is 502.
func TestActionLookups(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		a.setWorker(func(o *worker.Options) { o.AllowPrivate = true })
		owner := a.register("Ada")
		outsider := a.register("Eve")
		gone := httptest.NewServer(http.NotFoundHandler())
		gone.Close() // nothing listens there now
		n := a.storeNotification(orgNote(owner, "Two actions",
			perch.NotificationAction{ID: "a1", Type: perch.ActionView, Label: "Open", URL: "https://example.com/x"},
			a.httpAction("a2", "Restart", perch.ActionRequest{Method: "POST", URL: gone.URL + "/restart"})))

		expect(t, a.runAction(outsider.Access, n.ID, "a1"), 404)
		expect(t, a.runAction(outsider.Access, n.ID, "a2"), 404)
		expect(t, a.runAction(owner.Access, n.ID, "a9"), 404)
		expect(t, a.runAction(owner.Access, "999999", "a1"), 404)
		expect(t, a.runAction(owner.Access, "not-an-id", "a1"), 404)
		if msg := expect(t, a.runAction(owner.Access, n.ID, "a1"), 409).ErrorMessage(); !strings.Contains(msg, "view action") {
			t.Errorf("view: %q", msg)
		}
		res := expect(t, a.runAction(owner.Access, n.ID, "a2"), 502)
		if res.ErrorCode() != perch.EBADGATEWAY || strings.Contains(res.Raw, strings.TrimPrefix(gone.URL, "http://")) {
			t.Errorf("unreachable: %s", res.Raw)
		}
		if e := a.auditOf(owner.OrgID, perch.AuditNotificationAction)[0]; e.Changes["outcome"] != "unreachable" {
			t.Errorf("audit %+v", e.Changes)
		}
	})
}

// TestActionsRateLimited: past the per-user allowance of actions, 429 in
// the error shape with Retry-After; another user keeps theirs.
func TestActionsRateLimited(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, func(o *Options) { o.Limits.Actions = perch.Limit{Count: 2, Period: time.Minute} })
		owner := a.register("Ada")
		member := a.invite(owner, "Bob", "member")
		n := a.storeNotification(orgNote(owner, "View", perch.NotificationAction{ID: "a1", Type: perch.ActionView, Label: "Open", URL: "https://example.com/x"}))
		expect(t, a.runAction(owner.Access, n.ID, "a1"), 409)
		expect(t, a.runAction(owner.Access, n.ID, "a1"), 409)
		res := expect(t, a.runAction(owner.Access, n.ID, "a1"), 429)
		if res.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
		expect(t, a.runAction(member.Access, n.ID, "a1"), 409)
	})
}

// TestPagerDutyNativeActions: without a stored key, PagerDuty incidents
// carry no actions; with one (sealed, never shown), they carry Acknowledge
// and Resolve, which call PagerDuty's PUT /incidents/{id} (the fake checks
// it is made as the reference says) as the stored From address; a key
// removed after the notification arrived makes running one 409.
func TestPagerDutyNativeActions(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		const key = "u+LiveKey_123-abc"
		fake := pagerdutyfake.Start(t, key)
		fake.AddIncident("Q1CHK42", "triggered")
		a := newAPI(t, s, func(o *Options) { o.Actions.PagerDutyURL = fake.URL() })
		owner := a.register("Ada")
		member := a.invite(owner, "Bob", "member")
		_, hook := a.whToken(owner, "incidents", "org", "")
		incident := whRead(t, "pagerduty/v3.incident.triggered.high.json")

		// No key: no native actions.
		first := a.whOK("/webhooks/pagerduty", hook, incident).IDs[0]
		if notes := a.whHistory(member, ""); len(notes) != 1 || strings.Contains(a.call("GET", "/api/v1/notifications", member.Access, nil).Raw, `"actions"`) {
			t.Fatalf("without a key the notification carries actions: %s", a.call("GET", "/api/v1/notifications", member.Access, nil).Raw)
		}
		expect(t, a.runAction(member.Access, first, "acknowledge"), 404)

		// Storing the key: validated, owners and admins only, never shown.
		res := expect(t, a.call("PUT", "/api/v1/org/integrations/pagerduty", owner.Access, map[string]string{"api_key": "has space", "from_email": "nope"}), 422)
		if f := res.Fields(); f["api_key"] == nil || f["from_email"] == nil {
			t.Errorf("fields %v, want api_key and from_email", f)
		}
		expect(t, a.call("PUT", "/api/v1/org/integrations/pagerduty", owner.Access, map[string]string{"api_key": strings.Repeat("k", 201), "from_email": "ops@example.com"}), 422)
		expect(t, a.call("PUT", "/api/v1/org/integrations/pagerduty", member.Access, map[string]string{"api_key": key, "from_email": "ops@example.com"}), 403)
		res = expect(t, a.call("PUT", "/api/v1/org/integrations/pagerduty", owner.Access, map[string]string{"api_key": key, "from_email": "ops@example.com"}), 200)
		if d := res.Data(); d["configured"] != true || d["from_email"] != "ops@example.com" || strings.Contains(res.Raw, key) {
			t.Errorf("PUT answered %s", res.Raw)
		}
		res = expect(t, a.call("GET", "/api/v1/org/integrations/pagerduty", owner.Access, nil), 200)
		if d := res.Data(); d["configured"] != true || d["updated_at"] == nil || strings.Contains(res.Raw, key) {
			t.Errorf("GET answered %s", res.Raw)
		}
		if e := a.auditOf(owner.OrgID, perch.AuditIntegrationUpdated); len(e) != 1 || e[0].Target.ID != "pagerduty" || strings.Contains(fmt.Sprint(e[0].Changes), key) {
			t.Errorf("audit %+v", e)
		}

		// With the key: Acknowledge and Resolve, carried out on PagerDuty.
		second := a.whOK("/webhooks/pagerduty", hook, incident, "X-Webhook-Id", "second-delivery").IDs[0]
		var got perch.Notification
		for _, n := range a.whHistoryFull(member) {
			if n.ID == second {
				got = n
			}
		}
		if len(got.Actions) != 2 || got.Actions[0].ID != "acknowledge" || got.Actions[0].Label != "Acknowledge" || got.Actions[1].ID != "resolve" {
			t.Fatalf("actions %+v", got.Actions)
		}
		raw := a.call("GET", "/api/v1/notifications", member.Access, nil).Raw
		if strings.Contains(raw, perch.NativePagerDutyAcknowledge) || strings.Contains(raw, perch.NativePagerDutyResolve) || strings.Contains(raw, key) {
			t.Errorf("the history shows what only the server needs: %s", raw)
		}
		if d := expect(t, a.runAction(member.Access, second, "acknowledge"), 200).Data(); d["status"] != float64(200) || d["ok"] != true {
			t.Errorf("acknowledge: %v", d)
		}
		if fake.Status("Q1CHK42") != "acknowledged" {
			t.Errorf("the incident is %q", fake.Status("Q1CHK42"))
		}
		expect(t, a.runAction(owner.Access, second, "resolve"), 200)
		if ch := fake.Changes(); len(ch) != 2 || ch[1].Status != "resolved" || ch[1].From != "ops@example.com" || ch[0].Incident != "Q1CHK42" {
			t.Errorf("PagerDuty saw %+v", ch)
		}
		if e := a.auditOf(owner.OrgID, perch.AuditNotificationAction); len(e) != 2 || e[0].Changes["native"] != perch.NativePagerDutyResolve || e[0].Changes["outcome"] != "done" {
			t.Errorf("audit %+v", e)
		}

		// PagerDuty's refusals are reported: an incident it does not know,
		// a key it does not take.
		unknown := a.storeNotification(orgNote(owner, "Gone", perch.NotificationAction{ID: "resolve", Type: perch.ActionHTTP, Label: "Resolve",
			Native: perch.NativePagerDutyResolve, Ref: "PNOSUCH"}))
		if d := expect(t, a.runAction(owner.Access, unknown.ID, "resolve"), 200).Data(); d["status"] != float64(404) || d["ok"] != false {
			t.Errorf("unknown incident: %v", d)
		}
		expect(t, a.call("PUT", "/api/v1/org/integrations/pagerduty", owner.Access, map[string]string{"api_key": "u+revoked", "from_email": "ops@example.com"}), 200)
		if d := expect(t, a.runAction(owner.Access, second, "resolve"), 200).Data(); d["status"] != float64(401) || d["ok"] != false {
			t.Errorf("wrong key: %v", d)
		}

		// The key removed after the notification arrived: 409.
		expect(t, a.call("DELETE", "/api/v1/org/integrations/pagerduty", owner.Access, nil), 204)
		expect(t, a.call("DELETE", "/api/v1/org/integrations/pagerduty", owner.Access, nil), 404)
		if msg := expect(t, a.runAction(member.Access, second, "acknowledge"), 409).ErrorMessage(); !strings.Contains(msg, "PagerDuty API key") {
			t.Errorf("without the key: %q", msg)
		}
		if d := expect(t, a.call("GET", "/api/v1/org/integrations/pagerduty", owner.Access, nil), 200).Data(); d["configured"] != false {
			t.Errorf("after removal: %v", d)
		}
		if e := a.auditOf(owner.OrgID, perch.AuditIntegrationRemoved); len(e) != 1 {
			t.Errorf("removal audited %d times", len(e))
		}
	})
}

// whHistoryFull is acc's history as notifications.
func (a *api) whHistoryFull(acc *account) []perch.Notification {
	a.t.Helper()
	res := expect(a.t, a.call("GET", "/api/v1/notifications", acc.Access, nil), 200)
	var out struct {
		Data []perch.Notification `json:"data"`
	}
	if err := json.Unmarshal([]byte(res.Raw), &out); err != nil {
		a.t.Fatal(err)
	}
	return out.Data
}
