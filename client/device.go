package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/perch-dev/perch"
)

// The desktop sign-in (device/PKCE flow), both sides: the app that signs in
// (StartDeviceSignIn, then ExchangeDeviceCode with the code its loopback
// callback receives, or DeviceSignInStatus until it carries the session)
// and the signed-in person who approves it (DeviceRequest, AnswerDevice).

// DeviceStart is the server's answer to the start of a desktop sign-in.
type DeviceStart struct {
	SessionID       string `json:"session_id"`
	VerificationURL string `json:"verification_url"` // the approval page, for the browser
	// UserCode (BCDF-GHJK) is for the person to type on the approval page:
	// show it next to VerificationURL. Only an approval with it lets
	// DeviceSignInStatus carry the session.
	UserCode  string `json:"user_code"`
	ExpiresIn int    `json:"expires_in"` // seconds the sign-in lives
}

// DeviceStatus is how a desktop sign-in stands: Status is pending,
// approved, denied or expired. The first answer after an approval with the
// user code carries the session (Session.AccessToken is set); later ones
// say Exchanged. CallbackOnly says the approver did not type the user code,
// so only the one-time code of the loopback callback can complete it.
type DeviceStatus struct {
	Status       string `json:"status"`
	Exchanged    bool   `json:"exchanged"`
	CallbackOnly bool   `json:"callback_only"`
	Session
}

// DeviceRequest is a desktop sign-in as the person asked to approve it sees
// it (perch.DevicePrompt).
type DeviceRequest = perch.DevicePrompt

// DeviceAnswer is the server's answer to an approval or a denial.
type DeviceAnswer struct {
	Status      string `json:"status"`       // approved or denied
	RedirectURL string `json:"redirect_url"` // the app's loopback callback, for the browser
	// UserCodeConfirmed is set when the approval came with the right user
	// code: the app may then also complete the sign-in by polling.
	UserCodeConfirmed bool `json:"user_code_confirmed"`
}

// StartDeviceSignIn starts a desktop sign-in for an app that listens on
// 127.0.0.1:port for the callback and holds the verifier of the S256
// challenge; clientName ("" for the server's default) is shown on the
// approval page. Errors: EBADREQUEST with fields, ERATELIMITED.
func (c *Client) StartDeviceSignIn(ctx context.Context, port int, challenge, clientName string) (*DeviceStart, error) {
	q := url.Values{"port": {strconv.Itoa(port)}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	if clientName != "" {
		q.Set("client_name", clientName)
	}
	var out DeviceStart
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/auth/device/authorize", query: q, out: &out, anonymous: true})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// DeviceSignInStatus asks how the sign-in stands, proving with verifier
// that the caller started it. Errors: EBADREQUEST (a wrong verifier names
// code_verifier), ENOTFOUND, ERATELIMITED.
func (c *Client) DeviceSignInStatus(ctx context.Context, sessionID, verifier string) (*DeviceStatus, error) {
	var out DeviceStatus
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/auth/device/status/" + url.PathEscape(sessionID),
		query: url.Values{"code_verifier": {verifier}}, out: &out, anonymous: true})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ExchangeDeviceCode trades the one-time code the loopback callback
// received, with the verifier, for the session. It does not sign the
// client in. Errors: EBADREQUEST (a wrong code names code), ECONFLICT when
// it is not approved or was already exchanged, ENOTFOUND.
func (c *Client) ExchangeDeviceCode(ctx context.Context, sessionID, code, verifier string) (*Session, error) {
	var s Session
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/auth/device/exchange",
		body: map[string]string{"session_id": sessionID, "code": code, "code_verifier": verifier}, out: &s, anonymous: true})
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// DeviceRequest returns the sign-in the signed-in user is asked to
// approve. Errors: ENOTFOUND, EUNAUTHORIZED.
func (c *Client) DeviceRequest(ctx context.Context, sessionID string) (*DeviceRequest, error) {
	var out DeviceRequest
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/auth/device/requests/" + url.PathEscape(sessionID), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// AnswerDevice approves the sign-in (or denies it, when approve is false)
// as the signed-in user. userCode is the code the person typed from their
// app, "" for none: without it the sign-in can complete only through the
// loopback callback. Errors: EVALIDATION (user_code) for a code that is
// not the app's, ECONFLICT when already answered, EBADREQUEST when
// expired, EFORBIDDEN for an API token, ENOTFOUND.
func (c *Client) AnswerDevice(ctx context.Context, sessionID string, approve bool, userCode string) (*DeviceAnswer, error) {
	in := map[string]string{"session_id": sessionID, "action": "approve"}
	if !approve {
		in["action"] = "deny"
	}
	if userCode != "" {
		in["user_code"] = userCode
	}
	var out DeviceAnswer
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/auth/device/complete", body: in, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
