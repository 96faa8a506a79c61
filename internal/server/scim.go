package server

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/scim"
)

// SCIM 2.0 (RFC 7643 and 7644) at /scim/v2: an organisation's identity
// provider (Okta, Microsoft Entra) adds, changes and removes its members.
// The protocol's pure parts (filters, PATCH, the User resource) are in
// internal/scim; here are the HTTP side, the SCIM token and the effects.

const (
	scimPrefix = "/scim/v2"
	// scimBodyLimit bounds a SCIM request body: a user is well under 4 KiB.
	scimBodyLimit = 64 << 10
	// scimMaxCount is the most users one list answers (RFC 7644 §3.4.2.4).
	scimMaxCount = 200
	// scimDefaultCount is a list's page size when the caller gives none.
	scimDefaultCount = 100
)

var scimContentType = []string{"application/scim+json"}

// isSCIMPath reports whether path is under /scim/v2, where every answer,
// errors included, is SCIM's (writeError hands them to writeSCIMError).
func isSCIMPath(path string) bool {
	return path == scimPrefix || strings.HasPrefix(path, scimPrefix+"/")
}

// scimCall is an authenticated SCIM request: the organisation whose token
// it carries, and the token as the audit log names it.
type scimCall struct {
	orgID string
	actor perch.AuditActor
}

// scimHandlerFunc is a SCIM handler: like handlerFunc, its failure is
// returned, and written by scimHandler in the SCIM error schema.
type scimHandlerFunc func(w http.ResponseWriter, r *http.Request, c *scimCall) error

// scimHandler authenticates a SCIM request by the organisation's SCIM
// token, counts it against the token's allowance (the per-user limit),
// bounds its body, and serves it with h.
func (s *Server) scimHandler(h scimHandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.serveSCIM(w, r, h); err != nil {
			s.writeSCIMError(w, r, err)
		}
	})
}

func (s *Server) serveSCIM(w http.ResponseWriter, r *http.Request, h scimHandlerFunc) error {
	c, err := s.scimCaller(r)
	if err != nil {
		if lerr := s.allowRate(w, r, s.opts.Limits.User, "unauthenticated-ip:"+s.clientIP(r).String(), 1); lerr != nil {
			return lerr
		}
		return err
	}
	if err := s.allowRate(w, r, s.opts.Limits.User, "scim:"+c.orgID, 1); err != nil {
		return err
	}
	r.Body = http.MaxBytesReader(w, r.Body, scimBodyLimit)
	return h(w, r.WithContext(context.WithValue(r.Context(), scimCallKey{}, c)), c)
}

// scimCallKey is the context key of a request's *scimCall.
type scimCallKey struct{}

// scimCallOf is the SCIM caller of r, nil outside /scim/v2; audit reads it
// to name the identity provider as the actor.
func scimCallOf(r *http.Request) *scimCall {
	c, _ := r.Context().Value(scimCallKey{}).(*scimCall)
	return c
}

// scimCaller finds the organisation of the request's SCIM token.
func (s *Server) scimCaller(r *http.Request) (*scimCall, error) {
	scheme, raw, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	raw = strings.TrimSpace(raw)
	if !strings.EqualFold(scheme, "Bearer") || !strings.HasPrefix(raw, perch.SCIMTokenPrefix) {
		return nil, perch.Errorf(perch.EUNAUTHORIZED, "Send the organisation's SCIM token as a Bearer token.")
	}
	orgID, err := s.scimDB.SCIMTokenOrg(r.Context(), auth.HashToken(raw))
	if perch.ErrorCode(err) == perch.ENOTFOUND {
		return nil, perch.Errorf(perch.EUNAUTHORIZED, "The SCIM token is not valid; an owner can make a new one on the organisation's single sign-on page.")
	}
	if err != nil {
		return nil, err
	}
	return &scimCall{orgID: orgID, actor: perch.AuditActor{Type: perch.ActorSCIM, ID: auth.DisplayPrefix(raw)}}, nil
}

// scimBody reads a request body, bounded by scimHandler.
func scimBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, err
		}
		return nil, scim.Errorf(http.StatusBadRequest, scim.InvalidSyntax, "The request body could not be read.")
	}
	return b, nil
}

// writeSCIM answers v as SCIM JSON with status.
func writeSCIM(w http.ResponseWriter, status int, v any) error {
	w.Header()["Content-Type"] = scimContentType
	writeJSONBody(w, status, v)
	return nil
}

// writeSCIMError answers err in the SCIM error schema (RFC 7644 §3.12).
// Perch's own errors are translated: a taken userName or address is 409
// uniqueness, a validation problem 400 invalidValue. Internal errors are
// logged, and their details never sent.
func (s *Server) writeSCIMError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := errors.AsType[*scim.Error](err)
	if !ok {
		e = scimErrorOf(err)
	}
	switch e.Status {
	case http.StatusInternalServerError:
		s.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "request_id", requestID(r), "err", err)
	case http.StatusServiceUnavailable:
		s.log.Warn("unavailable", "method", r.Method, "path", r.URL.Path, "request_id", requestID(r), "err", err)
		if w.Header().Get("Retry-After") == "" {
			w.Header().Set("Retry-After", retryUnavailable)
		}
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="perch-scim"`)
	}
	writeSCIM(w, e.Status, e)
}

// scimErrorOf translates an error of Perch's into a SCIM one.
func scimErrorOf(err error) *scim.Error {
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return scim.Errorf(http.StatusRequestEntityTooLarge, "", "The request body is larger than the limit of %s.", byteSize(mbe.Limit))
	}
	code := perch.ErrorCode(err)
	status := perch.HTTPStatus(code)
	msg := perch.ErrorMessage(err)
	switch code {
	case perch.ECONFLICT:
		if pe, ok := errors.AsType[*perch.Error](err); ok && len(pe.Fields) > 0 {
			return scim.Errorf(status, scim.Uniqueness, "%s", msg)
		}
	case perch.EVALIDATION, perch.EBADREQUEST:
		if pe, ok := errors.AsType[*perch.Error](err); ok && len(pe.Fields) > 0 {
			// Every problem, fields in sorted order: a map's order would
			// change the detail from one try of the same request to the next.
			lines := make([]string, 0, len(pe.Fields))
			for _, field := range slices.Sorted(maps.Keys(pe.Fields)) {
				lines = append(lines, field+" "+pe.Fields[field]+".")
			}
			msg = strings.Join(lines, " ")
		}
		return scim.Errorf(http.StatusBadRequest, scim.InvalidValue, "%s", msg)
	}
	return scim.Errorf(status, "", "%s", msg)
}

// scimBase is the root of SCIM URLs, as the identity provider is told.
func (s *Server) scimBase() string { return s.baseURL() + scimPrefix }

// The discovery documents (RFC 7644 §4) describe what Perch supports.

func (s *Server) scimServiceProviderConfig(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	return writeSCIM(w, http.StatusOK, scim.ServiceProviderConfig(s.scimBase()))
}

func (s *Server) scimResourceTypes(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	return writeSCIM(w, http.StatusOK, scim.ResourceTypes(s.scimBase()))
}

func (s *Server) scimResourceType(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	doc, ok := scim.ResourceType(s.scimBase(), r.PathValue("id"))
	if !ok {
		return scim.Errorf(http.StatusNotFound, "", "Perch serves two resource types, User and Group.")
	}
	return writeSCIM(w, http.StatusOK, doc)
}

func (s *Server) scimSchemas(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	return writeSCIM(w, http.StatusOK, scim.Schemas(s.scimBase()))
}

func (s *Server) scimSchema(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	doc, ok := scim.Schema(s.scimBase(), r.PathValue("id"))
	if !ok {
		return scim.Errorf(http.StatusNotFound, "", "Perch serves the User and Group schemas and the enterprise User extension.")
	}
	return writeSCIM(w, http.StatusOK, doc)
}
