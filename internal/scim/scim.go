// Package scim is the pure core of Perch's SCIM 2.0 server (RFC 7643 and
// RFC 7644) at /scim/v2: it parses the filters and PATCH paths that Okta and
// Microsoft Entra send, reads and patches the part of a User and of a Group
// that Perch keeps, and renders Users, Groups, lists, errors and the
// discovery documents.
//
// Nothing here does I/O. Every problem with a request is an *Error carrying
// the HTTP status and the scimType to answer with, and a detail that can be
// shown to the identity provider's administrator as it is.
package scim

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Schema and message URNs (RFC 7643 §8.7, RFC 7644 §3).
const (
	// UserSchema is the core User schema.
	UserSchema = "urn:ietf:params:scim:schemas:core:2.0:User"
	// EnterpriseSchema is the enterprise User extension: department,
	// employeeNumber and manager are kept, the rest accepted and not kept.
	EnterpriseSchema = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
	// ListSchema marks a list response.
	ListSchema = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
	// PatchSchema marks a PATCH request body.
	PatchSchema = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
	// ErrorSchema marks an error response.
	ErrorSchema = "urn:ietf:params:scim:api:messages:2.0:Error"
)

// The scimType values of RFC 7644 §3.12 that Perch answers with.
const (
	// InvalidFilter: a filter with bad syntax or one Perch does not support.
	InvalidFilter = "invalidFilter"
	// TooMany: the query would answer more results than the server allows.
	TooMany = "tooMany"
	// Uniqueness: a value, such as userName, is already taken.
	Uniqueness = "uniqueness"
	// Mutability: the change would modify an attribute that cannot be changed that way.
	Mutability = "mutability"
	// InvalidSyntax: the request body is not a valid SCIM message.
	InvalidSyntax = "invalidSyntax"
	// InvalidPath: a PATCH path is malformed or names no attribute Perch knows.
	InvalidPath = "invalidPath"
	// NoTarget: a PATCH path matched nothing.
	NoTarget = "noTarget"
	// InvalidValue: a value is missing, of the wrong type or out of bounds.
	InvalidValue = "invalidValue"
)

// Error is a SCIM error: an HTTP status, an optional scimType, and a detail
// for people.
type Error struct {
	Status int    // HTTP status, e.g. http.StatusBadRequest
	Type   string // scimType, e.g. InvalidFilter; "" when none applies
	Detail string // what was wrong, readable by the IdP's administrator
}

// Error returns the status, the scimType and the detail in one line.
func (e *Error) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("scim %d: %s", e.Status, e.Detail)
	}
	return fmt.Sprintf("scim %d %s: %s", e.Status, e.Type, e.Detail)
}

// Errorf makes an *Error whose detail is formatted as by fmt.Sprintf.
func Errorf(status int, scimType, format string, args ...any) *Error {
	return &Error{Status: status, Type: scimType, Detail: fmt.Sprintf(format, args...)}
}

// errorBody is the error response of RFC 7644 §3.12.
type errorBody struct {
	Schemas  []string `json:"schemas"`
	Status   string   `json:"status"` // a string, as the RFC's examples have it
	ScimType string   `json:"scimType,omitempty"`
	Detail   string   `json:"detail,omitempty"`
}

// MarshalJSON gives the RFC 7644 §3.12 body, with the status as a string:
// {"schemas":[ErrorSchema],"status":"400","scimType":"invalidFilter","detail":"..."}.
func (e *Error) MarshalJSON() ([]byte, error) {
	if e == nil {
		return []byte("null"), nil
	}
	return json.Marshal(errorBody{
		Schemas:  []string{ErrorSchema},
		Status:   strconv.Itoa(e.Status),
		ScimType: e.Type,
		Detail:   e.Detail,
	})
}
