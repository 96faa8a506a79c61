package server

import (
	"context"
	"crypto/subtle"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
)

// The desktop sign-in (device/PKCE flow): the app listens on a loopback port,
// starts a sign-in with the S256 challenge of a verifier only it knows, shows
// the user code it is given, and opens the verification page; a signed-in
// user approves it there, and the browser is sent to the app's port with a
// one-time code, which the app exchanges, with the verifier, for a session
// of its own. An app that cannot take the callback polls the status with the
// verifier instead, and a poll gets the tokens only when the approver typed
// the user code: whoever started a sign-in holds its verifier, so without
// the code anyone could have a victim approve their sign-in and poll for the
// victim's tokens (docs/DESIGN.md, "Desktop sign-in: threat model").

// deviceStart is the answer to the start of a desktop sign-in.
type deviceStart struct {
	SessionID       string `json:"session_id"`
	VerificationURL string `json:"verification_url"`
	UserCode        string `json:"user_code"`  // BCDF-GHJK: the app shows it; the approver types it
	ExpiresIn       int    `json:"expires_in"` // seconds the sign-in lives
}

// deviceStatusAnswer is the answer to a status poll. Tokens come with the
// first answer after an approval with the user code, and never again; later
// answers say exchanged. An approval without the code says callback_only:
// its tokens go only to the one-time code of the loopback callback.
type deviceStatusAnswer struct {
	Status       string `json:"status"`
	Exchanged    bool   `json:"exchanged,omitempty"`
	CallbackOnly bool   `json:"callback_only,omitempty"`
	*authResponse
}

// deviceAnswer is the body of complete.
type deviceAnswer struct {
	SessionID string `json:"session_id"`
	Action    string `json:"action"`    // "approve" (the default) or "deny"
	UserCode  string `json:"user_code"` // as the approver typed it; optional
}

var (
	errDeviceVerifier = &perch.Error{Code: perch.EBADREQUEST, Message: "The code_verifier does not match this sign-in request.",
		Fields: map[string]string{"code_verifier": "does not match the code_challenge"}}
	errDeviceCode = &perch.Error{Code: perch.EBADREQUEST, Message: "The code is not the one issued for this sign-in request.",
		Fields: map[string]string{"code": "does not match"}}
	errDeviceAPIToken = perch.Errorf(perch.EFORBIDDEN,
		"An API token cannot approve a sign-in; sign in to the dashboard and approve it there.")
)

// deviceAuthorize starts a desktop sign-in and tells the app the page to
// open and the user code to show.
func (s *Server) deviceAuthorize(w http.ResponseWriter, r *http.Request) error {
	req, err := perch.ParseDeviceAuthorize(r.URL.Query())
	if err != nil {
		return err
	}
	code, hash := auth.NewUserCode()
	req.ClientIP, req.UserCodeHash = s.clientIP(r).String(), hash
	d, err := s.authDB.CreateDeviceSession(r.Context(), *req)
	if err != nil {
		return err
	}
	verify := s.opts.BaseURL + "/device?session_id=" + url.QueryEscape(d.ID)
	return respond(w, http.StatusOK, deviceStart{SessionID: d.ID, VerificationURL: verify, UserCode: perch.FormatUserCode(code),
		ExpiresIn: int(perch.DeviceSessionTTL.Seconds())})
}

// deviceRequestInfo shows a signed-in user the sign-in they are asked to
// approve, for the verification page (deviceRequestFor says whom).
func (s *Server) deviceRequestInfo(w http.ResponseWriter, r *http.Request) error {
	d, err := s.deviceRequestFor(r.Context(), r.PathValue("session_id"), principal(r).User)
	if err != nil {
		return err
	}
	status := d.Status
	if status == perch.DeviceExchanged {
		status = perch.DeviceApproved
	}
	return respond(w, http.StatusOK, perch.DevicePrompt{SessionID: d.ID, ClientName: d.ClientName, ClientIP: d.ClientIP,
		Status: status, CreatedAt: d.CreatedAt, ExpiresAt: d.ExpiresAt})
}

// errDeviceRequestNotFound is the answer about a sign-in the caller may not
// see: the store's own for an id that does not exist, word for word, so
// that an id is never confirmed.
var errDeviceRequestNotFound = perch.Errorf(perch.ENOTFOUND, "Sign-in request not found.")

// deviceRequestFor returns the sign-in id as u may see it. Undecided
// (pending, or expired unanswered), it is for the person about to answer
// it, who cannot be known before they do: anyone signed in who holds its
// id, which only the app's verification link carries (the app opens it in
// its user's browser, or shows it beside the user code to type). Once
// approved or denied it is the decider's alone: what it says then (who
// answered, whether the tokens went out) is nobody else's business, and
// another user holding the id is someone the link was passed to. Anyone
// else is answered errDeviceRequestNotFound, as for no such id.
func (s *Server) deviceRequestFor(ctx context.Context, id string, u *perch.User) (*perch.DeviceSession, error) {
	d, err := s.authDB.DeviceSession(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.UserID != "" && d.UserID != u.ID {
		return nil, errDeviceRequestNotFound
	}
	return d, nil
}

// deviceComplete records the signed-in user's answer to a pending sign-in
// and sends the browser back to the app: with a one-time code when
// approved, with error=access_denied when denied. An approval with the
// user code the app shows (checked: a wrong one is validation_failed)
// also lets the app's status poll take the tokens. The answer carries the
// callback URL for the browser to be sent on to. A sign-in another user
// answered is not found, as deviceRequestFor answers it.
func (s *Server) deviceComplete(w http.ResponseWriter, r *http.Request) error {
	// Another site must not make a signed-in browser approve a sign-in the
	// attacker started, whether by form post or by cookie.
	if err := s.checkOrigin(r); err != nil {
		return err
	}
	p := principal(r)
	// An API token is a narrower credential than a sign-in (it can be
	// deactivated on its own); it must not mint sessions that outlive it.
	if p.APITokenID != "" {
		return errDeviceAPIToken
	}
	in, err := readDeviceAnswer(r)
	if err != nil {
		return err
	}
	d, err := s.deviceRequestFor(r.Context(), in.SessionID, p.User)
	if err != nil {
		return err
	}
	var status, callback string
	confirmed := false
	if in.Action == "deny" {
		d, err := s.authDB.DenyDeviceSession(r.Context(), in.SessionID, p.User.ID)
		if err != nil {
			return err
		}
		status, callback = perch.DeviceDenied, deviceCallback(d.Port, "error=access_denied&session_id="+url.QueryEscape(d.ID))
		s.audit(r, perch.AuditEntry{Action: perch.AuditDeviceDenied, Target: deviceTarget(d.ID), Changes: map[string]any{"client_name": d.ClientName}})
	} else {
		if confirmed, err = checkUserCode(d, in); err != nil {
			return err
		}
		code, hash := auth.NewToken(perch.DeviceCodePrefix)
		d, err := s.authDB.ApproveDeviceSession(r.Context(), in.SessionID, p.User.ID, hash, confirmed)
		if err != nil {
			return err
		}
		status, callback = perch.DeviceApproved, deviceCallback(d.Port, "session_id="+url.QueryEscape(d.ID)+"&code="+url.QueryEscape(code))
		s.audit(r, perch.AuditEntry{Action: perch.AuditDeviceApproved, Target: deviceTarget(d.ID),
			Changes: map[string]any{"client_name": d.ClientName, "user_code_confirmed": confirmed}})
	}
	return respond(w, http.StatusOK, deviceCompleted{Status: status, RedirectURL: callback, UserCodeConfirmed: confirmed})
}

// deviceCompleted is the JSON answer of complete.
type deviceCompleted struct {
	Status            string `json:"status"`
	RedirectURL       string `json:"redirect_url"`
	UserCodeConfirmed bool   `json:"user_code_confirmed"` // the app's status poll may take the tokens
}

// checkUserCode reports whether the approval in confirms the sign-in d
// with its user code: false when none was typed, an EVALIDATION error for a
// code that is not the one the app shows. A sign-in that can no longer be
// answered says so first, rather than that the code is wrong.
func checkUserCode(d *perch.DeviceSession, in deviceAnswer) (bool, error) {
	if strings.TrimSpace(in.UserCode) == "" {
		return false, nil
	}
	if err := d.CheckDecidable(); err != nil {
		return false, err
	}
	if err := d.CheckUserCode(in.UserCode); err != nil {
		return false, err
	}
	return true, nil
}

// deviceCallback is the app's loopback callback with query. Always the IPv4
// loopback address, never "localhost", which may resolve elsewhere
// (RFC 8252 §8.3).
func deviceCallback(port int, query string) string {
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/callback?" + query
}

// readDeviceAnswer reads complete's JSON body.
func readDeviceAnswer(r *http.Request) (in deviceAnswer, err error) {
	if err := decode(r, &in); err != nil {
		return in, err
	}
	p := perch.Problems{}
	if strings.TrimSpace(in.SessionID) == "" {
		p.Add("session_id", "is required")
	}
	if in.Action != "" && in.Action != "approve" && in.Action != "deny" {
		p.Add("action", `must be "approve" or "deny"`)
	}
	return in, badRequest(p)
}

// deviceExchange hands out the tokens of an approved sign-in, once, to the
// holder of its one-time code and code verifier.
func (s *Server) deviceExchange(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		SessionID    string `json:"session_id"`
		Code         string `json:"code"`
		CodeVerifier string `json:"code_verifier"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	p := perch.Problems{}
	if in.SessionID == "" {
		p.Add("session_id", "is required")
	}
	if in.Code == "" {
		p.Add("code", "is required")
	}
	checkVerifier(p, in.CodeVerifier)
	if err := badRequest(p); err != nil {
		return err
	}
	d, err := s.deviceSessionFor(r.Context(), in.SessionID, in.CodeVerifier)
	if err != nil {
		return err
	}
	if err := d.CheckExchangeable(false); err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(auth.HashToken(in.Code)), []byte(d.CodeHash)) != 1 {
		return errDeviceCode
	}
	res, err := s.exchangeDevice(r, d, false)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, res)
}

// deviceStatus answers how a sign-in stands to the holder of its verifier.
// The first answer after an approval with the user code carries the tokens
// (and spends the sign-in, as an exchange would); an app that cannot take
// the callback signs in this way. The verifier alone proves only that the
// caller started the sign-in, not that the approver meant that caller: an
// approval without the code says callback_only and never hands tokens out
// here.
func (s *Server) deviceStatus(w http.ResponseWriter, r *http.Request) error {
	verifier := r.URL.Query().Get("code_verifier")
	p := perch.Problems{}
	checkVerifier(p, verifier)
	if err := badRequest(p); err != nil {
		return err
	}
	d, err := s.deviceSessionFor(r.Context(), r.PathValue("session_id"), verifier)
	if err != nil {
		return err
	}
	if d.CheckExchangeable(true) == nil {
		res, err := s.exchangeDevice(r, d, true)
		switch perch.ErrorCode(err) {
		case "":
			return respond(w, http.StatusOK, deviceStatusAnswer{Status: perch.DeviceApproved, authResponse: res})
		case perch.ECONFLICT, perch.EBADREQUEST:
			// Another poll or an exchange took the tokens first, or the
			// sign-in expired this instant: report where it stands now.
			if d, err = s.authDB.DeviceSession(r.Context(), d.ID); err != nil {
				return err
			}
		default:
			return err
		}
	}
	out := deviceStatusAnswer{Status: d.Status}
	switch {
	case d.Status == perch.DeviceExchanged:
		// The API keeps to the four states of the flow; exchanged is
		// approved with the tokens already handed out.
		out = deviceStatusAnswer{Status: perch.DeviceApproved, Exchanged: true}
	case d.Status == perch.DeviceApproved && !d.UserCodeConfirmed:
		out.CallbackOnly = true
	}
	return respond(w, http.StatusOK, out)
}

// deviceSessionFor returns the sign-in id when verifier is the one its
// challenge was made from: ENOTFOUND, or bad_request for another verifier.
func (s *Server) deviceSessionFor(ctx context.Context, id, verifier string) (*perch.DeviceSession, error) {
	d, err := s.authDB.DeviceSession(ctx, id)
	if err != nil {
		return nil, err
	}
	if !perch.VerifierMatches(verifier, d.CodeChallenge) {
		return nil, errDeviceVerifier
	}
	return d, nil
}

// exchangeDevice spends the approved sign-in d, for a status poll when
// polled, and starts a session for the user who approved it. Of racing
// callers one wins; the rest get ECONFLICT.
func (s *Server) exchangeDevice(r *http.Request, d *perch.DeviceSession, polled bool) (*authResponse, error) {
	ctx := r.Context()
	if err := s.authDB.ExchangeDeviceSession(ctx, d.ID, polled); err != nil {
		return nil, err
	}
	u, err := s.authDB.User(ctx, d.UserID)
	if err != nil {
		return nil, err
	}
	res, err := s.signIn(ctx, u)
	if err == nil {
		s.audit(r, perch.AuditEntry{Action: perch.AuditSignedIn, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID,
			Changes: map[string]any{"method": "desktop", "client_name": d.ClientName}})
	}
	return res, err
}

func deviceTarget(id string) perch.AuditTarget {
	return perch.AuditTarget{Type: "device_session", ID: id}
}

// checkVerifier records a problem with a code verifier.
func checkVerifier(p perch.Problems, verifier string) {
	switch {
	case verifier == "":
		p.Add("code_verifier", "is required")
	case !perch.ValidCodeVerifier(verifier):
		p.Add("code_verifier", `must be 43 to 128 characters of A-Z, a-z, 0-9 and "-._~"`)
	}
}

// badRequest returns the problems in p as one bad_request error, or nil.
// The device flow answers malformed parameters with 400, as OAuth does
// (RFC 6749 §5.2), not with validation_failed.
func badRequest(p perch.Problems) error {
	if len(p) == 0 {
		return nil
	}
	return &perch.Error{Code: perch.EBADREQUEST, Message: "The request is missing or has invalid parameters.", Fields: p}
}
