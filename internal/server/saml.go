package server

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/saml"
	"github.com/perch-dev/perch/internal/store"
)

// ssoStore is what SAML sign-in, its configuration and the accounts it makes
// need from storage.
type ssoStore interface {
	ConsumeSAMLRequest(ctx context.Context, orgID, id string) error
	CreateSAMLRequest(ctx context.Context, r store.SAMLRequest) error
	CreateSSOUser(ctx context.Context, orgID, email, name, role string) (*perch.User, error)
	DeleteSAMLConfig(ctx context.Context, orgID string) error
	DomainVerified(ctx context.Context, orgID, domain string) (bool, error)
	EndSignInsBoundBySSO(ctx context.Context, orgID, userID string) ([]store.EndedSignIns, error)
	MarkSAMLAssertionUsed(ctx context.Context, orgID, assertionID string, expires time.Time) error
	Org(ctx context.Context, id string) (*perch.Org, error)
	PutSAMLConfig(ctx context.Context, c store.SAMLConfig) (*store.SAMLConfig, error)
	SAMLConfig(ctx context.Context, orgID string) (*store.SAMLConfig, error)
	SAMLDomains(ctx context.Context, orgID string) ([]perch.SAMLDomain, error)
	SAMLOrgByDomain(ctx context.Context, domain string) (string, error)
	SAMLOrgBySlug(ctx context.Context, slug string) (string, error)
	SAMLRequestByRelay(ctx context.Context, relay string) (*store.SAMLRequest, error)
	SCIMToken(ctx context.Context, orgID string) (*perch.SCIMToken, error)
	SSOEnforced(ctx context.Context, orgID string) (bool, error)
	SetSAMLDomains(ctx context.Context, orgID string, domains []string, verified bool) error
	SetSCIMToken(ctx context.Context, orgID, hash, prefix string) (*perch.SCIMToken, error)
	UserCredentials(ctx context.Context, email string) (*perch.User, string, error)
	VerifySAMLDomain(ctx context.Context, orgID, domain string) error
}

var _ ssoStore = (*store.Store)(nil)

// SAML single sign-on, the service provider's side (docs/DESIGN.md, SAML): the
// metadata an identity provider reads, the start of a sign-in, and the
// assertion consumer service that ends it in a dashboard session. The
// settings are in saml_config.go; the protocol itself (the bounds and the
// one parse of a response, Perch's own checks of it, metadata, the
// AuthnRequest) is internal/saml's.

// The service provider's paths.
const (
	samlMetadataPath = "/api/v1/auth/saml/metadata"
	samlLoginPath    = "/api/v1/auth/saml/login"
	samlACSPath      = "/api/v1/auth/saml/acs"
)

// samlDefaultTarget is where a sign-in that asked for no page ends.
const samlDefaultTarget = "/notifications"

// maxSAMLForm is the size of the form that brings a response: the
// response in base64 (4/3 of saml.MaxResponseSize, and line breaks where
// an identity provider wraps it), percent-encoded where base64 has + / and
// =, and the RelayState. A body past it is not read further.
const maxSAMLForm = 512 << 10

// samlIdentity is what a verified assertion says, as the accounts of
// single sign-on read it (sso_accounts.go).
type samlIdentity = saml.Identity

// refuse is a sign-in refused, with the reason for the person signing in.
func refuse(format string, args ...any) error {
	return perch.Errorf(perch.EUNAUTHORIZED, format, args...)
}

// refusal is err, when it is internal/saml's *saml.Refusal, as the error
// the sign-in page shows; any other error as it is.
func refusal(err error) error {
	if ref, ok := errors.AsType[*saml.Refusal](err); ok {
		return refuse("%s", ref.Reason)
	}
	return err
}

func (s *Server) baseURL() string { return strings.TrimRight(s.opts.BaseURL, "/") }

// samlEntityID is this server's entity ID for an organisation, which is
// also the URL of its metadata.
func (s *Server) samlEntityID(orgID string) string {
	return s.baseURL() + samlMetadataPath + "?org_id=" + url.QueryEscape(orgID)
}

func (s *Server) samlACSURL() string { return s.baseURL() + samlACSPath }

func (s *Server) samlLoginURL(orgID string) string {
	return s.baseURL() + samlLoginPath + "?org_id=" + url.QueryEscape(orgID)
}

// serviceProvider is the organisation's service provider for its
// settings, signing with key (nil where nothing is signed).
func (s *Server) serviceProvider(cfg *store.SAMLConfig, key crypto.Signer) (*saml.ServiceProvider, error) {
	md, err := saml.ParseMetadata([]byte(cfg.IDPMetadataXML))
	if err != nil {
		return nil, errors.New("saml: the stored metadata " + err.Error())
	}
	block, _ := pem.Decode([]byte(cfg.SPCertificate))
	if block == nil {
		return nil, errors.New("saml: no stored service provider certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, err
	}
	return &saml.ServiceProvider{EntityID: s.samlEntityID(cfg.OrgID), ACSURL: s.samlACSURL(), Certificate: cert, Key: key,
		IDP: md, AllowIDPInitiated: cfg.AllowIDPInitiated}, nil
}

// spKey opens an organisation's sealed service provider key.
func (s *Server) spKey(cfg *store.SAMLConfig) (crypto.Signer, error) {
	if s.opts.Secrets == nil {
		return nil, errors.New("no secret key is set (PERCH_SECRET_KEY)")
	}
	der, err := s.opts.Secrets.Open(cfg.SPKeySealed)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("the stored key is not an RSA key")
	}
	return signer, nil
}

// samlConfigOf returns the organisation's settings, or ENOTFOUND with a
// message for people.
func (s *Server) samlConfigOf(ctx context.Context, orgID string) (*store.SAMLConfig, error) {
	cfg, err := s.ssoDB.SAMLConfig(ctx, orgID)
	if perch.ErrorCode(err) == perch.ENOTFOUND {
		return nil, perch.Errorf(perch.ENOTFOUND, "This organisation has no SAML single sign-on.")
	}
	return cfg, err
}

// samlMetadata serves GET /api/v1/auth/saml/metadata?org_id=: the service
// provider's metadata for the organisation's identity provider
// (saml.ServiceProvider.Metadata says what it publishes).
func (s *Server) samlMetadata(w http.ResponseWriter, r *http.Request) error {
	cfg, err := s.samlConfigOf(r.Context(), r.URL.Query().Get("org_id"))
	if err != nil {
		return err
	}
	sp, err := s.serviceProvider(cfg, nil)
	if err != nil {
		return err
	}
	out, err := sp.Metadata()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/samlmetadata+xml")
	w.WriteHeader(http.StatusOK)
	w.Write(out)
	return nil
}

// samlTarget is where a sign-in ends: the desktop sign-in to approve
// (device_session), a page of this site (redirect), or the feed.
func samlTarget(redirect, deviceSession string) string {
	deviceSession = strings.TrimSpace(deviceSession)
	if deviceSession != "" && utf8.RuneCountInString(deviceSession) <= 64 && perch.TextProblem(deviceSession, perch.SingleLine) == "" {
		return "/device?session_id=" + url.QueryEscape(deviceSession)
	}
	if perch.LocalPath(redirect) {
		return redirect
	}
	return samlDefaultTarget
}

// samlLogin serves GET /api/v1/auth/saml/login?org_id=&redirect=&device_session=:
// it starts a sign-in at the organisation's identity provider with a
// signed AuthnRequest (HTTP-Redirect). The request is remembered with a
// random RelayState and the page to end on, for the answer, and bound to
// this browser (setSAMLBinding). Anything that stops it sends the browser
// back to sign in, with the reason.
func (s *Server) samlLogin(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	cfg, err := s.ssoDB.SAMLConfig(r.Context(), q.Get("org_id"))
	switch {
	case perch.ErrorCode(err) == perch.ENOTFOUND || err == nil && !cfg.Enabled:
		return s.toSignIn(w, r, "Single sign-on is not set up for this organisation.")
	case err != nil:
		return err
	}
	key, err := s.spKey(cfg)
	if err != nil {
		s.log.Error("saml: the service provider key cannot be opened", "org_id", cfg.OrgID, "err", err, "request_id", requestID(r))
		return s.toSignIn(w, r, "Single sign-on cannot start: this server cannot read its SAML key. Tell the administrators of this Perch server.")
	}
	sp, err := s.serviceProvider(cfg, key)
	if err != nil {
		return err
	}
	relay, browser := rand.Text(), rand.Text()
	reqID, to, err := sp.AuthnRequest(relay)
	if err != nil {
		return err
	}
	err = s.ssoDB.CreateSAMLRequest(r.Context(), store.SAMLRequest{ID: reqID, OrgID: cfg.OrgID, RelayState: relay,
		Target: samlTarget(q.Get("redirect"), q.Get("device_session")), BrowserHash: auth.HashToken(browser),
		ExpiresAt: s.now().Add(perch.SAMLRequestTTL)})
	if err != nil {
		return err
	}
	s.setSAMLBinding(w, browser, int(perch.SAMLRequestTTL.Seconds()))
	w.Header().Set("Location", to.String())
	w.WriteHeader(http.StatusFound)
	return nil
}

// toSignIn sends the browser to the sign-in page with a message.
func (s *Server) toSignIn(w http.ResponseWriter, r *http.Request, message string) error {
	w.Header().Set("Location", "/signin?error="+url.QueryEscape(message))
	w.WriteHeader(http.StatusFound)
	return nil
}

// samlACS serves POST /api/v1/auth/saml/acs, where the browser brings the
// identity provider's response (HTTP-POST binding). Accepted, it signs the
// user in as password sign-in does, sets the dashboard's session cookies
// and sends the browser on to the page the sign-in was started for;
// refused, back to sign in with the reason.
//
// Anyone may post here, so the work is bounded before the response is
// parsed (saml.ParseResponse), and it is parsed once. A refusal is audited in the
// organisation's log only once the response's signature verified against
// the organisation's identity provider's certificate; before that, nothing
// shows the organisation it names had any part in it, and the refusal goes
// to the server's log (samlUnverified).
func (s *Server) samlACS(w http.ResponseWriter, r *http.Request) error {
	// The browser's binding served this one answer, whatever it is.
	s.setSAMLBinding(w, "", -1)
	if r.ContentLength > maxSAMLForm {
		return s.samlUnverified(w, r, "", refusal(saml.ErrTooLarge))
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxSAMLForm)
	if err := r.ParseForm(); err != nil {
		if big, ok := errors.AsType[*http.MaxBytesError](err); ok {
			if big.Limit != maxSAMLForm { // the server's own limit, which every route answers alike
				return err
			}
			return s.samlUnverified(w, r, "", refusal(saml.ErrTooLarge))
		}
		return s.samlUnverified(w, r, "", refuse("The sign-in response cannot be read."))
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(r.PostForm.Get("SAMLResponse")))
	if err != nil || len(raw) == 0 {
		return s.samlUnverified(w, r, "", refuse("The identity provider sent no SAML response."))
	}
	resp, err := saml.ParseResponse(raw)
	if err != nil {
		return s.samlUnverified(w, r, "", refusal(err))
	}
	relay := r.PostForm.Get("RelayState")
	ctx := r.Context()

	// The organisation: the one the sign-in was started for, in this
	// browser, or, for a sign-in the identity provider started, the one the
	// assertion claims to be for (which the checks then hold it to).
	var req *store.SAMLRequest
	if relay != "" {
		if req, err = s.ssoDB.SAMLRequestByRelay(ctx, relay); perch.ErrorCode(err) == perch.ENOTFOUND {
			req = nil
		} else if err != nil {
			return s.samlUnverified(w, r, "", err)
		}
	}
	var orgID, reqID, target string
	switch {
	case req != nil:
		orgID, reqID, target = req.OrgID, req.ID, req.Target
		if !sameBrowser(r, req) {
			return s.samlUnverified(w, r, orgID, refuse("This sign-in was started in another browser, or too long ago: start again in this browser."))
		}
	case perch.LocalPath(relay): // an identity provider may name the page to end on
		orgID, target = claimedOrg(resp, s.baseURL()+samlMetadataPath+"?org_id="), relay
	default:
		orgID, target = claimedOrg(resp, s.baseURL()+samlMetadataPath+"?org_id="), samlDefaultTarget
	}
	cfg, err := s.ssoDB.SAMLConfig(ctx, orgID)
	switch {
	case orgID == "" || perch.ErrorCode(err) == perch.ENOTFOUND || err == nil && !cfg.Enabled:
		return s.samlUnverified(w, r, orgID, refuse("Single sign-on is not enabled for the organisation this response is for."))
	case err != nil:
		return s.samlUnverified(w, r, orgID, err)
	}
	certs, err := saml.ParseCertsPEM(cfg.IDPCertificates)
	if err != nil {
		return s.samlUnverified(w, r, orgID, err)
	}
	trust := saml.Trust{
		IDPEntityID: cfg.IDPEntityID, Certs: certs, Audience: s.samlEntityID(orgID), ACSURL: s.samlACSURL(),
		RequestID: reqID, AllowIDPInitiated: cfg.AllowIDPInitiated, EmailAttribute: cfg.EmailAttribute, Now: s.now(),
	}
	id, err := trust.Verify(resp)
	if ref, ok := errors.AsType[*saml.Refusal](err); ok && ref.Verified {
		// From the signature on the response is the organisation's
		// identity provider's, and its refusal is audited for the
		// organisation.
		return s.samlRefused(w, r, orgID, "", refusal(err))
	} else if err != nil {
		return s.samlUnverified(w, r, orgID, refusal(err))
	}

	// The library's checks of the same response, after Perch's: its parser
	// reads only what Perch's signature checks passed.
	sp, err := s.serviceProvider(cfg, nil)
	if err != nil {
		return s.samlRefused(w, r, orgID, id.Email, err)
	}
	assertionID, err := sp.LibraryCheck(raw, reqID)
	if err != nil {
		s.log.Info("saml: the library refused a response Perch accepted", "org_id", orgID, "err", err, "request_id", requestID(r))
		return s.samlRefused(w, r, orgID, id.Email, refuse("The identity provider's response did not pass the SAML library's checks."))
	}
	if assertionID != id.AssertionID {
		return s.samlRefused(w, r, orgID, id.Email, refuse("The SAML library read another assertion than Perch did."))
	}

	// Used once: the sign-in it answers ends, and its ID is remembered on
	// every instance for as long as it is valid.
	if reqID != "" {
		if err := s.ssoDB.ConsumeSAMLRequest(ctx, orgID, reqID); perch.ErrorCode(err) == perch.ENOTFOUND {
			return s.samlRefused(w, r, orgID, id.Email, refuse("This sign-in was completed already or has expired: start again."))
		} else if err != nil {
			return s.samlRefused(w, r, orgID, id.Email, err)
		}
	}
	if err := s.ssoDB.MarkSAMLAssertionUsed(ctx, orgID, id.AssertionID, id.Until); err != nil {
		if perch.ErrorCode(err) == perch.ECONFLICT {
			err = refuse("This sign-in response was used already: start again.")
		}
		return s.samlRefused(w, r, orgID, id.Email, err)
	}

	u, err := s.samlUser(r, cfg, id)
	if err != nil {
		return s.samlRefused(w, r, orgID, id.Email, err)
	}
	res, err := s.signIn(ctx, u)
	if err != nil {
		return s.samlRefused(w, r, orgID, id.Email, err)
	}
	s.setSessionCookies(w, res.AccessToken, res.RefreshToken)
	s.audit(r, perch.AuditEntry{Action: perch.AuditSignedIn, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID,
		Changes: map[string]any{"method": "saml", "idp_entity_id": cfg.IDPEntityID}})
	w.Header().Set("Location", target)
	w.WriteHeader(http.StatusFound)
	return nil
}

// samlBindingCookie holds the secret that binds a sign-in started at Perch
// to the browser that started it (docs/DESIGN.md, SAML): without it, a response
// to a sign-in someone started in their own browser, posted from another
// person's browser by a page they visit, would sign that person in to the
// first one's account (login CSRF). Only its hash is stored, with the
// request. A browser keeps one: a second sign-in started in it replaces
// the first's, as the OAuth state cookie does.
const samlBindingCookie = "perch_saml"

// setSAMLBinding sets the binding cookie for maxAge seconds (a negative
// maxAge removes it), sent to the ACS alone and never to scripts. The
// identity provider's page posts the response to the ACS from its own
// site, and browsers send a SameSite=Lax cookie on no cross-site POST: over
// https it is SameSite=None and Secure. Over http (a development server)
// SameSite=None is not allowed without Secure, and the attribute is left
// out: Firefox and Safari send such a cookie, Chrome sends it on a
// cross-site POST within two minutes of setting it, and an identity
// provider on the same host (another port) is not cross-site at all.
func (s *Server) setSAMLBinding(w http.ResponseWriter, secret string, maxAge int) {
	c := &http.Cookie{Name: samlBindingCookie, Value: secret, Path: samlACSPath, MaxAge: maxAge, HttpOnly: true}
	if strings.HasPrefix(s.opts.BaseURL, "https://") {
		c.Secure, c.SameSite = true, http.SameSiteNoneMode
	}
	http.SetCookie(w, c)
}

// sameBrowser reports whether r comes from the browser that started req:
// its binding cookie's hash is the one stored with the request. A request
// stored without one (started before browsers were bound) matches none.
func sameBrowser(r *http.Request, req *store.SAMLRequest) bool {
	c, err := r.Cookie(samlBindingCookie)
	if err != nil || c.Value == "" || req.BrowserHash == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(auth.HashToken(c.Value)), []byte(req.BrowserHash)) == 1
}

// claimedOrg reads, without trusting it, the organisation a response's
// audience names: its entity ID is prefix followed by the organisation's
// ID. "" when it names none.
func claimedOrg(resp *saml.Response, prefix string) string {
	for _, v := range resp.Audiences() {
		if id, ok := strings.CutPrefix(v, prefix); ok && id != "" {
			if id, err := url.QueryUnescape(id); err == nil && !strings.ContainsAny(id, "&=#") {
				return id
			}
		}
	}
	return ""
}

// samlUnverified refuses a response that is not shown to come from the
// identity provider of the organisation it names (claimedOrg, "" for
// none): anyone can post one, naming any organisation, so it is told to
// the server's log, not the organisation's audit log, which an attacker
// could otherwise fill. The browser goes back to sign in with the reason.
func (s *Server) samlUnverified(w http.ResponseWriter, r *http.Request, claimedOrg string, err error) error {
	message := perch.ErrorMessage(err)
	switch perch.ErrorCode(err) {
	case perch.EINTERNAL, perch.EUNAVAILABLE:
		s.log.Error("saml: sign-in failed", "claimed_org_id", claimedOrg, "err", err, "request_id", requestID(r))
		message = "Single sign-on failed on this server; try again in a moment."
	default:
		s.log.Info("saml: sign-in refused before the response was verified", "claimed_org_id", claimedOrg,
			"reason", message, "request_id", requestID(r))
	}
	return s.toSignIn(w, r, message)
}

// samlRefused audits for the organisation a refused sign-in whose response
// its identity provider signed, and sends the browser back to sign in with
// the reason; an error of the server's own is logged and told in general
// terms.
func (s *Server) samlRefused(w http.ResponseWriter, r *http.Request, orgID, email string, err error) error {
	message := perch.ErrorMessage(err)
	switch perch.ErrorCode(err) {
	case perch.EINTERNAL, perch.EUNAVAILABLE:
		s.log.Error("saml: sign-in failed", "org_id", orgID, "err", err, "request_id", requestID(r))
		message = "Single sign-on failed on this server; try again in a moment."
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditSignInFailed, Actor: perch.AuditActor{Type: perch.ActorUser, Email: email},
		OrgID: orgID, Changes: map[string]any{"method": "saml", "reason": message}})
	return s.toSignIn(w, r, message)
}

// samlDiscover serves POST /api/v1/auth/saml/discover {email} or {org}:
// the sign-in address of the organisation with SAML enabled that verified
// the address's domain, or whose slug org is. redirect and
// device_session pass on to the sign-in.
func (s *Server) samlDiscover(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Email         string `json:"email"`
		Org           string `json:"org"`
		Redirect      string `json:"redirect"`
		DeviceSession string `json:"device_session"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	in.Email, in.Org = strings.TrimSpace(in.Email), strings.TrimSpace(in.Org)
	p := perch.Problems{}
	switch {
	case in.Email != "":
		perch.ValidateEmail(p, in.Email)
	case in.Org == "":
		p.Add("email", "is required (or org, the organisation's short name)")
	default:
		perch.CheckText(p, "org", in.Org, perch.SingleLine)
	}
	if err := p.Err(); err != nil {
		return err
	}
	var orgID string
	var err error
	if in.Email != "" {
		orgID, err = s.ssoDB.SAMLOrgByDomain(r.Context(), perch.EmailDomain(in.Email))
	} else {
		orgID, err = s.ssoDB.SAMLOrgBySlug(r.Context(), in.Org)
	}
	if perch.ErrorCode(err) == perch.ENOTFOUND {
		return perch.Errorf(perch.ENOTFOUND, "No single sign-on is set up for this address or organisation. Sign in with your password, or ask your organisation's owner.")
	}
	if err != nil {
		return err
	}
	login := s.samlLoginURL(orgID)
	if in.Redirect != "" {
		login += "&redirect=" + url.QueryEscape(in.Redirect)
	}
	if in.DeviceSession != "" {
		login += "&device_session=" + url.QueryEscape(in.DeviceSession)
	}
	return respond(w, http.StatusOK, map[string]string{"login_url": login})
}
