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

		n := a.storeNotification(orgNote(owner, "Deploy 42 waits", a.httpAction("a1", "Approve", perch.ActionRequest{
			Method: "PUT", URL: target.URL + "/deploys/42?key=q-secret", Headers: map[string]string{"Authorization": secretHeader, "X-Custom": "c1"}, Body: body,
		})))
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
		if got := f.notification(t); len(got.Actions) != 1 || got.Actions[0].ID != "a1" || got.Actions[0].Type != "http" || got.Actions[0].Label != "Approve" {
			t.Fatalf("frame actions %+v", got.Actions)
		}

		res := expect(t, a.runAction(member.Access, n.ID, "a1"), 200)
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
		if r.Header.Get("X-Perch-Notification") != n.ID || r.Header.Get("X-Perch-Action") != "a1" {
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
		if e.Actor.ID != member.ID || e.Target.Type != "notification" || e.Target.ID != n.ID || e.Changes["action_id"] != "a1" ||
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
