package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
)

// The desktop sign-in (device/PKCE flow): the app listens on a loopback port,
// starts a sign-in with the S256 challenge of a verifier only it knows, and
// opens the verification page; a signed-in user approves it there, and the
// browser is sent to the app's port with a one-time code, which the app
// exchanges, with the verifier, for a session of its own. An app that cannot
// take the callback polls the status with the verifier instead.

// deviceStart is the answer to the start of a desktop sign-in.
type deviceStart struct {
	SessionID       string `json:"session_id"`
	VerificationURL string `json:"verification_url"`
	ExpiresIn       int    `json:"expires_in"` // seconds the sign-in lives
}

// deviceStatusAnswer is the answer to a status poll. Tokens come with the
// first answer after approval and never again; later answers say exchanged.
type deviceStatusAnswer struct {
	Status    string `json:"status"`
	Exchanged bool   `json:"exchanged,omitempty"`
	*authResponse
}

// deviceAnswer is the body of complete, as JSON or as a form.
type deviceAnswer struct {
	SessionID string `json:"session_id"`
	Action    string `json:"action"` // "approve" (the default) or "deny"
}

var (
	errDeviceVerifier = &perch.Error{Code: perch.EBADREQUEST, Message: "The code_verifier does not match this sign-in request.",
		Fields: map[string]string{"code_verifier": "does not match the code_challenge"}}
	errDeviceCode = &perch.Error{Code: perch.EBADREQUEST, Message: "The code is not the one issued for this sign-in request.",
		Fields: map[string]string{"code": "does not match"}}
	errDeviceAPIToken = perch.Errorf(perch.EFORBIDDEN,
		"An API token cannot approve a sign-in; sign in to the dashboard and approve it there.")
)

// devicePolling limits the status endpoint per client IP, with the per-user
// allowance and in a bucket of its own: the app polls every few seconds,
// which the sign-in limit (10 per 15 minutes by default) would refuse within
// a minute, and polling must not spend the address's login attempts.
func (s *Server) devicePolling(next http.Handler) http.Handler {
	return s.rateLimited(next, s.opts.UserLimit, func(r *http.Request) string { return "device-poll-ip:" + s.clientIP(r).String() })
}

// deviceAuthorize starts a desktop sign-in. A browser (Accept prefers HTML)
// is sent on to the verification page; the app gets JSON.
func (s *Server) deviceAuthorize(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	port, err := perch.ValidateDeviceAuthorize(q.Get("port"), q.Get("code_challenge"), q.Get("code_challenge_method"))
	if err != nil {
		return err
	}
	d, err := s.store.CreateDeviceSession(r.Context(), port, q.Get("code_challenge"))
	if err != nil {
		return err
	}
	verify := s.opts.BaseURL + "/device?session_id=" + url.QueryEscape(d.ID)
	if wantsHTML(r) {
		http.Redirect(w, r, verify, http.StatusSeeOther)
		return nil
	}
	return respond(w, http.StatusOK, deviceStart{SessionID: d.ID, VerificationURL: verify, ExpiresIn: int(perch.DeviceSessionTTL.Seconds())})
}

// deviceComplete records the signed-in user's answer to a pending sign-in
// and sends the browser back to the app: with a one-time code when
// approved, with error=access_denied when denied. A form post (the
// dashboard's page) is answered 303 to the app's callback; JSON with the
// callback URL.
func (s *Server) deviceComplete(w http.ResponseWriter, r *http.Request) error {
	// Another site must not make a signed-in browser approve a sign-in the
	// attacker started, whether by form post or by cookie.
	if err := s.web.CheckOrigin(r); err != nil {
		return err
	}
	p := principal(r)
	// An API token is a narrower credential than a sign-in (it can be
	// deactivated on its own); it must not mint sessions that outlive it.
	if p.APITokenID != "" {
		return errDeviceAPIToken
	}
	in, form, err := readDeviceAnswer(r)
	if err != nil {
		return err
	}
	var status, callback string
	if in.Action == "deny" {
		d, err := s.store.DenyDeviceSession(r.Context(), in.SessionID, p.User.ID)
		if err != nil {
			return err
		}
		status, callback = perch.DeviceDenied, deviceCallback(d.Port, "error=access_denied&session_id="+url.QueryEscape(d.ID))
	} else {
		code, hash := auth.NewToken(perch.DeviceCodePrefix)
		d, err := s.store.ApproveDeviceSession(r.Context(), in.SessionID, p.User.ID, hash)
		if err != nil {
			return err
		}
		status, callback = perch.DeviceApproved, deviceCallback(d.Port, "session_id="+url.QueryEscape(d.ID)+"&code="+url.QueryEscape(code))
	}
	if form {
		http.Redirect(w, r, callback, http.StatusSeeOther)
		return nil
	}
	return respond(w, http.StatusOK, map[string]string{"status": status, "redirect_url": callback})
}

// deviceCallback is the app's loopback callback with query. Always the IPv4
// loopback address, never "localhost", which may resolve elsewhere
// (RFC 8252 §8.3).
func deviceCallback(port int, query string) string {
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/callback?" + query
}

// readDeviceAnswer reads complete's body, a form or JSON, and reports which.
func readDeviceAnswer(r *http.Request) (in deviceAnswer, form bool, err error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if form = mt == "application/x-www-form-urlencoded"; form {
		if err := r.ParseForm(); err != nil {
			if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
				return in, form, mbe
			}
			return in, form, perch.Errorf(perch.EBADREQUEST, "The form cannot be read.")
		}
		in.SessionID, in.Action = r.PostForm.Get("session_id"), r.PostForm.Get("action")
	} else if err := decode(r, &in); err != nil {
		return in, form, err
	}
	p := perch.Problems{}
	if strings.TrimSpace(in.SessionID) == "" {
		p.Add("session_id", "is required")
	}
	if in.Action != "" && in.Action != "approve" && in.Action != "deny" {
		p.Add("action", `must be "approve" or "deny"`)
	}
	return in, form, badRequest(p)
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
	if err := d.CheckExchangeable(); err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(auth.HashToken(in.Code)), []byte(d.CodeHash)) != 1 {
		return errDeviceCode
	}
	res, err := s.exchangeDevice(r.Context(), d)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, res)
}

// deviceStatus answers how a sign-in stands to the holder of its verifier.
// The first answer after approval carries the tokens (and spends the
// sign-in, as an exchange would); an app that cannot take the callback
// signs in this way.
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
	if d.Status == perch.DeviceApproved {
		res, err := s.exchangeDevice(r.Context(), d)
		switch perch.ErrorCode(err) {
		case "":
			return respond(w, http.StatusOK, deviceStatusAnswer{Status: perch.DeviceApproved, authResponse: res})
		case perch.ECONFLICT, perch.EBADREQUEST:
			// Another poll or an exchange took the tokens first, or the
			// sign-in expired this instant: report where it stands now.
			if d, err = s.store.DeviceSession(r.Context(), d.ID); err != nil {
				return err
			}
		default:
			return err
		}
	}
	out := deviceStatusAnswer{Status: d.Status}
	if d.Status == perch.DeviceExchanged {
		// The API keeps to the four states of the flow; exchanged is
		// approved with the tokens already handed out.
		out = deviceStatusAnswer{Status: perch.DeviceApproved, Exchanged: true}
	}
	return respond(w, http.StatusOK, out)
}

// deviceSessionFor returns the sign-in id when verifier is the one its
// challenge was made from: ENOTFOUND, or bad_request for another verifier.
func (s *Server) deviceSessionFor(ctx context.Context, id, verifier string) (*perch.DeviceSession, error) {
	d, err := s.store.DeviceSession(ctx, id)
	if err != nil {
		return nil, err
	}
	if !perch.VerifierMatches(verifier, d.CodeChallenge) {
		return nil, errDeviceVerifier
	}
	return d, nil
}

// exchangeDevice spends the approved sign-in d and starts a session for the
// user who approved it. Of racing callers one wins; the rest get ECONFLICT.
func (s *Server) exchangeDevice(ctx context.Context, d *perch.DeviceSession) (*authResponse, error) {
	if err := s.store.ExchangeDeviceSession(ctx, d.ID); err != nil {
		return nil, err
	}
	u, err := s.store.User(ctx, d.UserID)
	if err != nil {
		return nil, err
	}
	return s.signIn(ctx, u)
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

// wantsHTML reports whether the Accept header prefers an HTML page to JSON,
// as a browser's does. No Accept header, */* alone, or a tie means JSON: the
// API answers JSON unless asked otherwise.
func wantsHTML(r *http.Request) bool {
	accept := strings.Join(r.Header.Values("Accept"), ",")
	html := acceptQuality(accept, "text/html")
	return html > 0 && html > acceptQuality(accept, "application/json")
}

// acceptQuality returns the q value the Accept header gives mediaType, from
// its most specific matching range (type/subtype over type/* over */*,
// RFC 9110 §12.5.1); 0 when no range matches.
func acceptQuality(accept, mediaType string) float64 {
	typ, _, _ := strings.Cut(mediaType, "/")
	best, bestRank := 0.0, -1
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		rank := -1
		switch mt {
		case mediaType:
			rank = 2
		case typ + "/*":
			rank = 1
		case "*/*":
			rank = 0
		}
		if rank < 0 {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
				q = f
			} else {
				q = 0 // unreadable: ignore the range
			}
		}
		if rank > bestRank || rank == bestRank && q > best {
			best, bestRank = q, rank
		}
	}
	return best
}
