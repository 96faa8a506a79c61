package scim

import (
	"encoding/json"
	"strings"
)

// enterpriseKey is EnterpriseSchema lower-cased, as attribute names are
// compared.
var enterpriseKey = strings.ToLower(EnterpriseSchema)

// Enterprise is what Perch keeps of the enterprise User extension (RFC 7643
// §4.3). Its other attributes (costCenter, organization, division) are
// accepted and not kept.
type Enterprise struct {
	Department     string
	EmployeeNumber string
	// Manager is manager.value: the identity provider's id of the user's
	// manager, kept as sent (Perch does not require it to be a member:
	// a provider may send a manager before provisioning them).
	Manager string
}

// IsZero reports whether e holds nothing, so that a User without the
// extension renders without it.
func (e Enterprise) IsZero() bool { return e == Enterprise{} }

// enterpriseAttrs are the extension's attributes, lower-cased; true marks
// those Perch keeps.
var enterpriseAttrs = map[string]bool{
	"department": true, "employeenumber": true, "manager": true,
	"costcenter": false, "organization": false, "division": false,
}

// mergeEnterprise sets on e the attributes of the extension object raw;
// null clears e. Names the extension does not define are ignored.
func mergeEnterprise(e Enterprise, raw json.RawMessage, name string) (Enterprise, *Error) {
	if isNull(raw) {
		return Enterprise{}, nil
	}
	ms, ok := objectMembers(raw)
	if !ok {
		return e, valueError("%q must be an object.", name)
	}
	if err := uniqueNames(ms, name); err != nil {
		return e, err
	}
	for _, m := range ms {
		attr := strings.ToLower(m.name)
		if _, known := enterpriseAttrs[attr]; !known {
			continue // what else a provider puts there is no reason to refuse the user
		}
		if err := e.set(attr, "", m.value, name+":"+m.name, false); err != nil {
			return e, err
		}
	}
	return e, nil
}

// set applies op's value to the extension attribute attr (lower-cased),
// or to its sub-attribute sub ("value" of manager); remove clears it.
// Attributes of the extension Perch does not keep change nothing.
func (e *Enterprise) set(attr, sub string, raw json.RawMessage, path string, remove bool) *Error {
	keep, known := enterpriseAttrs[attr]
	switch {
	case !known:
		return pathError("%q is not an attribute of the enterprise User extension.", path)
	case !keep:
		return nil
	case sub != "" && (attr != "manager" || sub != "value"):
		return pathError("%q: Perch keeps no such sub-attribute.", path)
	}
	var field *string
	switch attr {
	case "department":
		field = &e.Department
	case "employeenumber":
		field = &e.EmployeeNumber
	default:
		field = &e.Manager
	}
	if remove {
		*field = ""
		return nil
	}
	var err *Error
	if attr == "manager" && sub == "" {
		*field, err = managerValue(raw, path)
	} else {
		*field, err = trimmedString(raw, path, maxText)
	}
	return err
}

// managerValue reads a manager: the object {"value": id, ...} of RFC 7643,
// or the bare id Entra sends.
func managerValue(raw json.RawMessage, path string) (string, *Error) {
	if isNull(raw) || raw[0] == '"' {
		return trimmedString(raw, path, maxText)
	}
	ms, ok := objectMembers(raw)
	if !ok {
		return "", valueError("%q must be an object with a \"value\", or the manager's id.", path)
	}
	if err := uniqueNames(ms, path); err != nil {
		return "", err
	}
	for _, m := range ms {
		if strings.EqualFold(m.name, "value") {
			return trimmedString(m.value, path+".value", maxText)
		}
	}
	return "", nil // only $ref or displayName: no manager Perch can keep
}

// patchEnterprise applies op at a path of the extension: the whole
// extension (attr ""), or one of its attributes.
func (u *User) patchEnterprise(op string, p Path, path string, value json.RawMessage) *Error {
	if p.Filter != nil {
		return pathError("%q: the enterprise extension has no multi-valued attributes.", path)
	}
	if p.Attr == "" {
		if op == "remove" {
			u.Enterprise = Enterprise{}
			return nil
		}
		e, err := mergeEnterprise(u.Enterprise, value, path)
		if err == nil {
			u.Enterprise = e
		}
		return err
	}
	return u.Enterprise.set(p.Attr, p.Sub, value, path, op == "remove")
}

// EnterpriseResource is the enterprise extension as rendered.
type EnterpriseResource struct {
	Department     string   `json:"department,omitempty"`
	EmployeeNumber string   `json:"employeeNumber,omitempty"`
	Manager        *Manager `json:"manager,omitempty"`
}

// Manager is a user's manager as rendered: their id.
type Manager struct {
	Value string `json:"value"`
}

// renderEnterprise is e as rendered, nil when e holds nothing.
func renderEnterprise(e Enterprise) *EnterpriseResource {
	if e.IsZero() {
		return nil
	}
	r := &EnterpriseResource{Department: e.Department, EmployeeNumber: e.EmployeeNumber}
	if e.Manager != "" {
		r.Manager = &Manager{Value: e.Manager}
	}
	return r
}
