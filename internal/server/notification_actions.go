package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/netguard"
	"github.com/perch-dev/perch/internal/pagerduty"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/worker"
)

// actionStore is what running a notification's action needs from storage:
// the notification as the caller sees it, and the organisation's stored
// credentials for native actions.
type actionStore interface {
	Audience(ctx context.Context, u *perch.User) (*perch.Audience, error)
	NotificationFor(ctx context.Context, a *perch.Audience, id string) (*perch.Notification, error)
	OrgIntegration(ctx context.Context, orgID, kind string) (*store.OrgIntegration, error)
	HasOrgIntegration(ctx context.Context, orgID, kind string) (bool, error)
}

var _ actionStore = (*store.Store)(nil)

// DefaultActionLimit is how many actions one user may run unless
// configured otherwise (LimitOptions.Actions).
var DefaultActionLimit = perch.Limit{Count: 30, Period: time.Minute}

const (
	// actionTimeout bounds an http action's request, redirects and the
	// answer's body included.
	actionTimeout = 10 * time.Second
	// maxActionAnswer is how much of the target's answer is read (and
	// dropped), so that the connection can be reused.
	maxActionAnswer = 64 << 10
	// actionSigningPurpose derives the key of the organisations' action
	// signing secrets from the server's key.
	actionSigningPurpose = "notification actions"
)

// Outcomes an action's audit entry records.
const (
	outcomeDone        = "done"        // the target answered 2xx
	outcomeFailed      = "failed"      // it answered something else
	outcomeRefused     = "refused"     // the SSRF guard refused the target
	outcomeUnreachable = "unreachable" // no answer
)

// runAction serves POST /api/v1/notifications/{id}/actions/{action_id}:
// anyone who can see the notification runs one of its actions. An http
// action is sent from here through the SSRF guard and signed; a native one
// calls the source system with the organisation's stored credentials.
// What an http action sends, and to where, appears in no answer, log line
// or audit entry.
func (s *Server) runAction(w http.ResponseWriter, r *http.Request) error {
	u := principal(r).User
	// Counted before the lookup, so that ids cannot be probed past it.
	if err := s.allowRate(w, r, s.opts.Limits.Actions, "actions-user:"+u.ID, 1); err != nil {
		return err
	}
	a, err := s.actionDB.Audience(r.Context(), u)
	if err != nil {
		return err
	}
	n, err := s.actionDB.NotificationFor(r.Context(), a, r.PathValue("id"))
	if err != nil {
		return err
	}
	i := slices.IndexFunc(n.Actions, func(x perch.NotificationAction) bool { return x.ID == r.PathValue("action_id") })
	if i < 0 {
		return perch.Errorf(perch.ENOTFOUND, "Notification %s has no action %q.", n.ID, r.PathValue("action_id"))
	}
	act := n.Actions[i]
	var res perch.ActionResult
	switch {
	case act.Type == perch.ActionView:
		return perch.Errorf(perch.ECONFLICT, "%q is a view action: there is nothing for the server to run; open its url instead.", act.Label)
	case act.Native != "":
		res, err = s.runNative(r.Context(), u, act)
	case act.Type == perch.ActionHTTP:
		res, err = s.runHTTPAction(r.Context(), u, n, act)
	default:
		return perch.Errorf(perch.ECONFLICT, "This version of Perch cannot run %q actions.", act.Type)
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditNotificationAction, Target: perch.AuditTarget{Type: "notification", ID: n.ID},
		Changes: actionOutcome(act, res, err)})
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, res)
}

// actionOutcome is what the audit entry of a run says: the action and how
// it went (the status the target answered, when it answered).
func actionOutcome(act perch.NotificationAction, res perch.ActionResult, err error) map[string]any {
	c := map[string]any{"action_id": act.ID, "label": act.Label}
	if act.Native != "" {
		c["native"] = act.Native
	}
	switch {
	case err == nil && res.OK:
		c["outcome"], c["status"] = outcomeDone, res.Status
	case err == nil:
		c["outcome"], c["status"] = outcomeFailed, res.Status
	case perch.ErrorCode(err) == perch.EVALIDATION:
		c["outcome"] = outcomeRefused
	case perch.ErrorCode(err) == perch.EBADGATEWAY:
		c["outcome"] = outcomeUnreachable
	default:
		c["outcome"] = perch.ErrorCode(err)
	}
	return c
}

// errActionSealed answers an http action whose request cannot be opened:
// sealed under another key (PERCH_SECRET_KEY changed), or damaged.
var errActionSealed = perch.Errorf(perch.ECONFLICT,
	"This action can no longer be run: what it sends was sealed under another server key. Ask its sender for a new notification.")

// runHTTPAction makes an http action's request: the sender's method, URL,
// headers and body, through the SSRF guard the workflows' forwards use
// (the worker's: PERCH_WORKFLOW_ALLOW_PRIVATE), signed with
// X-Perch-Signature under the caller's organisation's action signing
// secret, within actionTimeout. The answer's body is read, bounded, and
// dropped.
func (s *Server) runHTTPAction(ctx context.Context, u *perch.User, n *perch.Notification, act perch.NotificationAction) (perch.ActionResult, error) {
	req, err := s.openActionRequest(act)
	if err != nil {
		return perch.ActionResult{}, err
	}
	secret, err := s.actionSigningSecret(u.OrgID)
	if err != nil {
		return perch.ActionResult{}, err
	}
	body := []byte(req.Body)
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URL, bytes.NewReader(body))
	if err != nil || hr.URL.Scheme != "http" && hr.URL.Scheme != "https" || hr.URL.Host == "" {
		return perch.ActionResult{}, perch.Errorf(perch.ECONFLICT, "This action's request cannot be made: its method or URL is not one Perch sends.")
	}
	for k, v := range req.Headers {
		hr.Header.Set(k, v)
	}
	if hr.Header.Get("User-Agent") == "" {
		hr.Header.Set("User-Agent", "Perch-Action/1")
	}
	// Perch's own headers last: a sender's cannot stand in for them.
	hr.Header.Set("X-Perch-Notification", n.ID)
	hr.Header.Set("X-Perch-Action", act.ID)
	hr.Header.Set("X-Perch-Signature", netguard.Sign(secret, body, s.now()))
	client := s.worker.Guard().Client(actionTimeout)
	defer client.CloseIdleConnections()
	res, err := client.Do(hr)
	if err != nil {
		return perch.ActionResult{}, actionError(err)
	}
	defer res.Body.Close()
	io.Copy(io.Discard, io.LimitReader(res.Body, maxActionAnswer))
	return perch.ActionResult{Status: res.StatusCode, OK: res.StatusCode >= 200 && res.StatusCode < 300}, nil
}

// openActionRequest reads back what the receiver sealed into act.Sealed.
func (s *Server) openActionRequest(act perch.NotificationAction) (*perch.ActionRequest, error) {
	if s.opts.Secrets == nil {
		return nil, worker.ErrNoSecretKey
	}
	raw, err := base64.StdEncoding.DecodeString(act.Sealed)
	if err != nil || act.Sealed == "" {
		return nil, errActionSealed
	}
	plain, err := s.opts.Secrets.Open(raw)
	if err != nil {
		return nil, errActionSealed
	}
	var req perch.ActionRequest
	if err := json.Unmarshal(plain, &req); err != nil {
		return nil, errActionSealed
	}
	return &req, nil
}

// actionSigningSecret is the secret an organisation's http actions are
// signed with: HMAC-SHA256 under a key derived from the server's for this
// purpose, of the organisation's id, in hex. Its owners and admins read it
// (GET /api/v1/org/integrations/actions) to verify X-Perch-Signature as a
// forward's receiver verifies its step's secret.
func (s *Server) actionSigningSecret(orgID string) (string, error) {
	if s.opts.Secrets == nil {
		return "", worker.ErrNoSecretKey
	}
	return hex.EncodeToString(s.opts.Secrets.Sign(actionSigningPurpose, []byte("org:"+orgID))), nil
}

// actionError says why an http action got no answer, without its URL (the
// transport's errors name the host and address): the guard's refusal, as
// 422 with what the address is; anything else, 502.
func actionError(err error) error {
	if ref, ok := errors.AsType[*netguard.Refusal](err); ok {
		return &perch.Error{Code: perch.EVALIDATION, Message: "The server refuses to send this action's request.",
			Fields: map[string]string{"url": "the target is refused: " + ref.Why}}
	}
	if errors.Is(err, netguard.ErrRefused) {
		return &perch.Error{Code: perch.EVALIDATION, Message: "The server refuses to send this action's request.",
			Fields: map[string]string{"url": "the target is refused (a redirect to a URL that is not http or https)"}}
	}
	if ue, ok := errors.AsType[*url.Error](err); ok && ue.Timeout() {
		return perch.Errorf(perch.EBADGATEWAY, "The action's target did not answer within %s.", actionTimeout)
	}
	return perch.Errorf(perch.EBADGATEWAY, "The action's target could not be reached.")
}

// runNative carries out a native action with the caller's organisation's
// stored credentials: PagerDuty's acknowledge and resolve.
func (s *Server) runNative(ctx context.Context, u *perch.User, act perch.NotificationAction) (perch.ActionResult, error) {
	status := map[string]string{
		perch.NativePagerDutyAcknowledge: pagerduty.StatusAcknowledged,
		perch.NativePagerDutyResolve:     pagerduty.StatusResolved,
	}[act.Native]
	if status == "" || act.Ref == "" {
		return perch.ActionResult{}, perch.Errorf(perch.ECONFLICT, "This version of Perch cannot run %q.", act.Label)
	}
	if s.pagerduty == nil {
		return perch.ActionResult{}, perch.Errorf(perch.EUNAVAILABLE, "This server cannot call PagerDuty: its API URL (PERCH_PAGERDUTY_API_URL) is not an http(s) URL.")
	}
	key, from, err := s.pagerDutyKey(ctx, u.OrgID)
	if err != nil {
		return perch.ActionResult{}, err
	}
	code, err := s.pagerduty.SetIncidentStatus(ctx, key, from, act.Ref, status)
	if err != nil {
		return perch.ActionResult{}, perch.Errorf(perch.EBADGATEWAY, "PagerDuty could not be reached, or did not answer within %s.", pagerduty.Timeout)
	}
	return perch.ActionResult{Status: code, OK: code >= 200 && code < 300}, nil
}

// pagerDutyKey opens the organisation's stored PagerDuty key: 409 when it
// stored none (or removed it after the notification arrived).
func (s *Server) pagerDutyKey(ctx context.Context, orgID string) (key, from string, err error) {
	in, err := s.actionDB.OrgIntegration(ctx, orgID, perch.IntegrationPagerDuty)
	if perch.ErrorCode(err) == perch.ENOTFOUND {
		return "", "", perch.Errorf(perch.ECONFLICT, "Your organisation has no PagerDuty API key stored, so Perch cannot act on PagerDuty for it. "+
			"An owner or admin can store one (PUT /api/v1/org/integrations/pagerduty).")
	}
	if err != nil {
		return "", "", err
	}
	if s.opts.Secrets == nil {
		return "", "", worker.ErrNoSecretKey
	}
	plain, err := s.opts.Secrets.Open(in.Sealed)
	if err != nil {
		return "", "", perch.Errorf(perch.ECONFLICT, "The stored PagerDuty API key was sealed under another server key; store it again.")
	}
	return string(plain), in.FromEmail, nil
}

// keepNativeActions drops the native actions of events whose organisation
// stored no credential to carry them out (a delivery without a token has
// none). Deliveries whose events carry no native action (every sender's
// but PagerDuty's) pay one loop over their actions and no query.
func (s *Server) keepNativeActions(ctx context.Context, orgID string, events []perch.Event) error {
	native := slices.ContainsFunc(events, func(e perch.Event) bool {
		return slices.ContainsFunc(e.Actions, func(a perch.NotificationAction) bool { return a.Native != "" })
	})
	if !native {
		return nil
	}
	if orgID != "" {
		has, err := s.actionDB.HasOrgIntegration(ctx, orgID, perch.IntegrationPagerDuty)
		if err != nil || has {
			return err
		}
	}
	for i := range events {
		events[i].Actions = slices.DeleteFunc(events[i].Actions, func(a perch.NotificationAction) bool { return a.Native != "" })
		if len(events[i].Actions) == 0 {
			events[i].Actions = nil
		}
	}
	return nil
}
