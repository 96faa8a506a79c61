package scim

import (
	"encoding/json"
	"strings"
)

// Limits on what Perch keeps of a User, in bytes.
const (
	maxText   = 256 // userName, externalId, displayName, name's parts, an email's type and display
	maxEmail  = 320 // an email's value
	maxEmails = 10
)

// Name is the components of a User's name (RFC 7643 §4.1.1).
type Name struct {
	Formatted       string `json:"formatted,omitempty"`
	FamilyName      string `json:"familyName,omitempty"`
	GivenName       string `json:"givenName,omitempty"`
	MiddleName      string `json:"middleName,omitempty"`
	HonorificPrefix string `json:"honorificPrefix,omitempty"`
	HonorificSuffix string `json:"honorificSuffix,omitempty"`
}

// field returns the sub-attribute of n named sub (lower-cased), nil when n has none.
func (n *Name) field(sub string) *string {
	switch sub {
	case "formatted":
		return &n.Formatted
	case "familyname":
		return &n.FamilyName
	case "givenname":
		return &n.GivenName
	case "middlename":
		return &n.MiddleName
	case "honorificprefix":
		return &n.HonorificPrefix
	case "honorificsuffix":
		return &n.HonorificSuffix
	}
	return nil
}

// Email is one of a User's email addresses (RFC 7643 §4.1.2).
type Email struct {
	Value   string `json:"value"`
	Type    string `json:"type,omitempty"`
	Primary bool   `json:"primary,omitempty"`
	Display string `json:"display,omitempty"`
}

// User holds what Perch keeps of a SCIM User. Other attributes of the core
// User schema and of the enterprise extension are accepted and not kept.
type User struct {
	UserName    string
	ExternalID  string
	Name        Name
	DisplayName string
	Emails      []Email
	Active      bool
	Title       string
	Enterprise  Enterprise
	// Role is the organisation role ("owner", "admin" or "member") that
	// the user's roles name (see roles.go), "" when they name none: a
	// POST or PUT without a recognised role leaves the role as it is. A
	// PATCH starts from the role the user has.
	Role string
}

// userAttrs are the attribute names of the core User schema (RFC 7643 §4.1),
// lower-cased; true marks the ones Perch keeps.
var userAttrs = map[string]bool{
	"username": true, "externalid": true, "name": true, "displayname": true, "emails": true, "active": true,
	"title": true, "roles": true,
	"schemas": false, "id": false, "meta": false, "nickname": false, "profileurl": false,
	"usertype": false, "preferredlanguage": false, "locale": false, "timezone": false, "password": false,
	"phonenumbers": false, "ims": false, "photos": false, "addresses": false, "groups": false,
	"entitlements": false, "x509certificates": false,
}

// DecodeUser reads the body of a POST or PUT /Users. Attribute names are
// case-insensitive. The enterprise extension's department, employeeNumber
// and manager are kept; the core User attributes Perch does not keep, and
// any other extension under a "urn:" name, are accepted and ignored; any
// other name is an *Error 400 InvalidSyntax. A missing userName or a value of the wrong
// type or size is an *Error 400 InvalidValue.
func DecodeUser(body []byte) (User, error) {
	ms, err := decodeBody(body)
	if err != nil {
		return User{}, err
	}
	u := User{Active: true}
	for _, m := range ms {
		if err := u.decodeAttr(m); err != nil {
			return User{}, err
		}
	}
	if u.UserName == "" {
		return User{}, valueError(`"userName" is required.`)
	}
	return u, nil
}

// decodeAttr sets the attribute m of a POST or PUT body on u.
func (u *User) decodeAttr(m member) *Error {
	var err *Error
	switch key := strings.ToLower(m.name); key {
	case "schemas":
		err = checkSchemas(m.value, UserSchema)
	case "username":
		if isNull(m.value) {
			return valueError(`"userName" is required.`)
		}
		u.UserName, err = userName(m.value, m.name)
	case "externalid":
		u.ExternalID, err = optString(m.value, m.name, maxText)
	case "displayname":
		u.DisplayName, err = optString(m.value, m.name, maxText)
	case "name":
		u.Name, err = mergeName(Name{}, m.value, m.name)
	case "emails":
		u.Emails, err = emailList(m.value, m.name, false)
	case "active":
		u.Active = true
		if !isNull(m.value) {
			u.Active, err = boolValue(m.value, "active")
		}
	case "title":
		u.Title, err = optString(m.value, m.name, maxText)
	case "roles":
		var entries []roleEntry
		if entries, err = roleList(m.value, m.name, false); err == nil {
			u.Role = pickRole(entries)
		}
	case enterpriseKey:
		u.Enterprise, err = mergeEnterprise(Enterprise{}, m.value, m.name)
	default:
		if _, known := userAttrs[key]; !known && !strings.HasPrefix(key, "urn:") {
			return syntaxError("%q is not an attribute of a User.", m.name)
		}
	}
	return err
}

// checkSchemas requires raw, when given, to be an array of strings holding want.
func checkSchemas(raw json.RawMessage, want string) *Error {
	if isNull(raw) {
		return nil
	}
	var schemas []string
	if err := json.Unmarshal(raw, &schemas); err != nil {
		return syntaxError(`"schemas" must be an array of URNs.`)
	}
	for _, s := range schemas {
		if strings.EqualFold(s, want) {
			return nil
		}
	}
	return syntaxError(`"schemas" must contain %q.`, want)
}

// userName reads a userName: a string, trimmed, neither empty nor longer than 256 bytes.
func userName(raw json.RawMessage, name string) (string, *Error) {
	if isNull(raw) {
		return "", valueError("%q must be a string.", name)
	}
	s, err := trimmedString(raw, name, maxText)
	if err == nil && s == "" {
		err = valueError("%q must not be empty.", name)
	}
	return s, err
}

// mergeName sets on n the sub-attributes of the name object raw; null clears n.
func mergeName(n Name, raw json.RawMessage, name string) (Name, *Error) {
	if isNull(raw) {
		return Name{}, nil
	}
	ms, ok := objectMembers(raw)
	if !ok {
		return n, valueError("%q must be an object.", name)
	}
	if err := uniqueNames(ms, name); err != nil {
		return n, err
	}
	for _, m := range ms {
		field := n.field(strings.ToLower(m.name))
		if field == nil {
			return n, syntaxError("%q is not a sub-attribute of %q.", m.name, name)
		}
		s, err := optString(m.value, name+"."+m.name, maxText)
		if err != nil {
			return n, err
		}
		*field = s
	}
	return n, nil
}

// emailList reads a list of emails; null is none. single lets one email
// object stand for a list of one, as PATCH allows.
func emailList(raw json.RawMessage, name string, single bool) ([]Email, *Error) {
	if isNull(raw) {
		return nil, nil
	}
	if single && raw[0] == '{' {
		raw = json.RawMessage("[" + string(raw) + "]")
	}
	var items []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, valueError("%q must be an array of email objects.", name)
	}
	if len(items) > maxEmails {
		return nil, valueError("%q has %d entries; Perch keeps at most %d.", name, len(items), maxEmails)
	}
	emails := make([]Email, 0, len(items))
	for _, item := range items {
		e, err := mergeEmail(Email{}, item, name)
		if err != nil {
			return nil, err
		}
		if e.Value == "" {
			return nil, valueError("Every entry of %q needs a \"value\".", name)
		}
		emails = append(emails, e)
	}
	if primaries(emails) > 1 {
		return nil, valueError("%q has more than one primary email.", name)
	}
	return emails, nil
}

// mergeEmail sets on e the sub-attributes of the email object raw. Names
// other than value, type, primary and display are ignored: IdPs send extras.
func mergeEmail(e Email, raw json.RawMessage, name string) (Email, *Error) {
	ms, ok := objectMembers(raw)
	if !ok {
		return e, valueError("The entries of %q must be objects.", name)
	}
	if err := uniqueNames(ms, name); err != nil {
		return e, err
	}
	for _, m := range ms {
		if err := e.set(strings.ToLower(m.name), m.value, name+"."+m.name); err != nil {
			return e, err
		}
	}
	return e, nil
}

// set sets e's sub-attribute sub (lower-cased) from raw; name is for the
// detail. Unknown sub-attributes are ignored.
func (e *Email) set(sub string, raw json.RawMessage, name string) *Error {
	var err *Error
	switch sub {
	case "value":
		e.Value, err = trimmedString(raw, name, maxEmail)
	case "type":
		e.Type, err = optString(raw, name, maxText)
	case "display":
		e.Display, err = optString(raw, name, maxText)
	case "primary":
		e.Primary = false
		if !isNull(raw) {
			e.Primary, err = boolValue(raw, name)
		}
	}
	return err
}

// primaries counts the emails marked primary.
func primaries(emails []Email) int {
	n := 0
	for _, e := range emails {
		if e.Primary {
			n++
		}
	}
	return n
}

// Email returns the address the account should use: the primary email's
// value, else the one of type "work", else the first, else UserName when it
// contains exactly one "@" with text on both sides; "" when there is none.
func (u User) Email() string {
	for _, e := range u.Emails {
		if e.Primary && e.Value != "" {
			return e.Value
		}
	}
	for _, e := range u.Emails {
		if strings.EqualFold(e.Type, "work") && e.Value != "" {
			return e.Value
		}
	}
	for _, e := range u.Emails {
		if e.Value != "" {
			return e.Value
		}
	}
	local, domain, ok := strings.Cut(u.UserName, "@")
	if ok && local != "" && domain != "" && !strings.Contains(domain, "@") {
		return u.UserName
	}
	return ""
}

// AccountName is the name to show for the account: DisplayName, else
// Name.Formatted, else GivenName and FamilyName, else UserName.
func (u User) AccountName() string {
	for _, s := range []string{u.DisplayName, u.Name.Formatted, u.Name.GivenName + " " + u.Name.FamilyName} {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return u.UserName
}
