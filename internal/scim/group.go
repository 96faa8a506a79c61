package scim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// GroupSchema is the core Group schema (RFC 7643 §4.2).
const GroupSchema = "urn:ietf:params:scim:schemas:core:2.0:Group"

// groupKey is GroupSchema lower-cased, as paths carry it.
var groupKey = strings.ToLower(GroupSchema)

// Member is a member of a Group: a User's id, and the name the identity
// provider shows for them (not kept: Perch renders its own).
type Member struct {
	Value   string
	Display string
}

// Group holds what Perch keeps of a SCIM Group: its name, the identity
// provider's id for it, and its members, each once, in the order given.
type Group struct {
	DisplayName string
	ExternalID  string
	Members     []Member
}

// MemberIDs are the values of g's members.
func (g Group) MemberIDs() []string {
	ids := make([]string, len(g.Members))
	for i, m := range g.Members {
		ids[i] = m.Value
	}
	return ids
}

// groupAttrs are the Group schema's attribute names, lower-cased; true
// marks those a request may write, false the read-only ones a body may
// carry back (id, meta), which are ignored.
var groupAttrs = map[string]bool{
	"displayname": true, "externalid": true, "members": true,
	"schemas": false, "id": false, "meta": false,
}

// DecodeGroup reads the body of a POST or PUT /Groups: displayName
// (required), externalId and members [{value, display, type, $ref}]. Names
// compare without case; id and meta are ignored, as is any extension under
// a "urn:" name; any other name is an *Error 400 InvalidSyntax. A member
// without a value, or of a type other than User, is 400 InvalidValue.
// A member listed twice is kept once.
func DecodeGroup(body []byte) (Group, error) {
	ms, err := decodeBody(body)
	if err != nil {
		return Group{}, err
	}
	var g Group
	for _, m := range ms {
		var err *Error
		switch key := strings.ToLower(m.name); key {
		case "schemas":
			err = checkSchemas(m.value, GroupSchema)
		case "displayname":
			g.DisplayName, err = groupName(m.value, m.name)
		case "externalid":
			g.ExternalID, err = optString(m.value, m.name, maxText)
		case "members":
			var list []Member
			if list, err = memberList(m.value, m.name, false); err == nil {
				g.Members = addMembers(nil, list)
			}
		default:
			if _, known := groupAttrs[key]; !known && !strings.HasPrefix(key, "urn:") {
				err = syntaxError("%q is not an attribute of a Group.", m.name)
			}
		}
		if err != nil {
			return Group{}, err
		}
	}
	if g.DisplayName == "" {
		return Group{}, valueError(`"displayName" is required.`)
	}
	return g, nil
}

// groupName reads a displayName: a string, trimmed, neither empty nor
// longer than 256 bytes.
func groupName(raw json.RawMessage, name string) (string, *Error) {
	if isNull(raw) {
		return "", valueError(`%q is required.`, name)
	}
	s, err := trimmedString(raw, name, maxText)
	if err == nil && s == "" {
		err = valueError("%q must not be empty.", name)
	}
	return s, err
}

// memberList reads a list of members; null is none. single lets one
// member object stand for a list of one, as PATCH allows.
func memberList(raw json.RawMessage, name string, single bool) ([]Member, *Error) {
	if isNull(raw) {
		return nil, nil
	}
	if single && raw[0] == '{' {
		raw = json.RawMessage("[" + string(raw) + "]")
	}
	var items []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, valueError("%q must be an array of member objects.", name)
	}
	list := make([]Member, 0, len(items))
	for _, item := range items {
		m, err := memberOf(item, name)
		if err != nil {
			return nil, err
		}
		list = append(list, m)
	}
	return list, nil
}

// memberOf reads one member: value is required; type, when given, must be
// User (Perch's groups hold no groups); $ref and other names are read past.
func memberOf(raw json.RawMessage, name string) (Member, *Error) {
	ms, ok := objectMembers(raw)
	if !ok {
		return Member{}, valueError("The entries of %q must be objects.", name)
	}
	if err := uniqueNames(ms, name); err != nil {
		return Member{}, err
	}
	var m Member
	for _, f := range ms {
		var err *Error
		switch strings.ToLower(f.name) {
		case "value":
			m.Value, err = trimmedString(f.value, name+".value", maxText)
		case "display":
			m.Display, err = optString(f.value, name+".display", maxText)
		case "type":
			var t string
			if t, err = optString(f.value, name+".type", maxText); err == nil && t != "" && !strings.EqualFold(t, "User") {
				err = valueError("%q: a member of type %q; Perch's groups hold users only.", name, t)
			}
		}
		if err != nil {
			return Member{}, err
		}
	}
	if m.Value == "" {
		return Member{}, valueError("Every entry of %q needs a \"value\": the user's id.", name)
	}
	return m, nil
}

// addMembers appends to members those of more not in it yet.
func addMembers(members, more []Member) []Member {
	for _, m := range more {
		if !slices.ContainsFunc(members, func(x Member) bool { return x.Value == m.Value }) {
			members = append(members, m)
		}
	}
	return members
}

// dropMembers is members without those for which gone is true.
func dropMembers(members []Member, gone func(Member) bool) []Member {
	if kept := slices.DeleteFunc(slices.Clone(members), gone); len(kept) > 0 {
		return kept
	}
	return nil
}

// ApplyGroupPatch applies a PatchOp body (RFC 7644 §3.5.2) to g and
// returns the result, in Okta's and Entra's shapes: op names in any case;
// `replace` with a value object and no path (a rename: displayName,
// externalId; id is read past); `add` of members with an array of
// {value[, display]}; `remove` with a value filter, `members[value eq
// "…"]`, or, as Entra does, with path `members` and a value listing the
// members; `replace` of members with the whole list; `remove` of members
// without a value empties the group. Removing a member that is not in the
// group changes nothing: the provider's wish already holds.
//
// All or nothing: on error, the result is g as given, and g itself is never
// changed. Errors are *Error 400 with scimType InvalidSyntax, InvalidPath,
// InvalidValue, NoTarget or Mutability.
func ApplyGroupPatch(g Group, body []byte) (Group, error) {
	ops, err := decodePatch(body)
	if err != nil {
		return g, err
	}
	out := g
	out.Members = slices.Clone(g.Members)
	if err := applyEach(ops, out.apply); err != nil {
		return g, err
	}
	return out, nil
}

// apply applies one operation to g.
func (g *Group) apply(op operation) *Error {
	if op.hasPath && !strings.EqualFold(op.path, GroupSchema) {
		return g.applyPath(op.op, op.path, op.value, true)
	}
	if op.op == "remove" {
		return Errorf(http.StatusBadRequest, NoTarget, `"remove" needs a "path".`)
	}
	ms, ok := objectMembers(op.value)
	if !ok {
		return valueError(`Without a "path", "value" must be an object of attributes.`)
	}
	if err := uniqueNames(ms, "value"); err != nil {
		return err
	}
	for _, m := range ms {
		if err := g.applyPath(op.op, m.name, m.value, false); err != nil {
			return err
		}
	}
	return nil
}

// applyPath applies op with value at path. explicit is false for the names
// of a value object, where read-only attributes (Okta sends the id back)
// are read past rather than refused.
func (g *Group) applyPath(op, path string, value json.RawMessage, explicit bool) *Error {
	if !explicit && hasPrefixFold(path, "urn:") && !hasPrefixFold(path, GroupSchema+":") {
		return nil // an extension Perch does not know, in a value object
	}
	p, err := parsePath(path)
	if err != nil {
		return err
	}
	if p.Schema != "" && p.Schema != groupKey {
		return pathError("%q: Perch does not know the schema %q.", path, p.Schema)
	}
	writable, known := groupAttrs[p.Attr]
	switch {
	case !known:
		return pathError("%q is not an attribute of a Group.", path)
	case !writable && explicit:
		return Errorf(http.StatusBadRequest, Mutability, "%q cannot be changed.", path)
	case !writable:
		return nil
	case p.Attr == "members":
		return g.patchMembers(op, p, path, value)
	case p.Filter != nil || p.Sub != "":
		return pathError("%q: that attribute has no sub-attributes or values to filter.", path)
	case p.Attr == "displayname" && op == "remove":
		return Errorf(http.StatusBadRequest, Mutability, "%q cannot be removed: a group needs a name.", path)
	case p.Attr == "displayname":
		g.DisplayName, err = groupName(value, path)
	case op == "remove":
		g.ExternalID = ""
	default:
		g.ExternalID, err = optString(value, path, maxText)
	}
	return err
}

// patchMembers applies op to members or members[filter].
func (g *Group) patchMembers(op string, p Path, path string, value json.RawMessage) *Error {
	if p.Sub != "" {
		return pathError("%q: Perch changes members as whole entries, not their sub-attributes.", path)
	}
	if p.Filter != nil {
		for _, c := range p.Filter {
			if c.Attr != "value" && c.Attr != "display" && c.Attr != "type" {
				return pathError("%q: a member has no sub-attribute %q to filter on.", path, c.Attr)
			}
		}
		if op != "remove" {
			return pathError("%q: a filter on members goes with \"remove\"; add members with the path \"members\".", path)
		}
		g.Members = dropMembers(g.Members, func(m Member) bool { return matchesMember(p.Filter, m) })
		return nil
	}
	if op == "remove" && isNull(value) {
		g.Members = nil
		return nil
	}
	list, err := memberList(value, path, true)
	if err != nil {
		return err
	}
	switch op {
	case "add":
		g.Members = addMembers(g.Members, list)
	case "replace":
		g.Members = addMembers(nil, list)
	default:
		g.Members = dropMembers(g.Members, func(m Member) bool {
			return slices.ContainsFunc(list, func(x Member) bool { return x.Value == m.Value })
		})
	}
	return nil
}

// matchesMember reports whether m meets every comparison of f: value is a
// user id, compared exactly; type is always User.
func matchesMember(f Filter, m Member) bool {
	for _, c := range f {
		s, isString := c.Value.(string)
		var ok bool
		switch c.Attr {
		case "value":
			ok = isString && s == m.Value
		case "display":
			ok = isString && s == m.Display
		case "type":
			ok = isString && strings.EqualFold(s, "User")
		}
		if !ok {
			return false
		}
	}
	return true
}

// GroupResource is a Group as answered to the identity provider.
type GroupResource struct {
	Schemas     []string         `json:"schemas"`
	ID          string           `json:"id"`
	ExternalID  string           `json:"externalId,omitempty"`
	DisplayName string           `json:"displayName"`
	Members     []MemberResource `json:"members,omitempty"`
	Meta        Meta             `json:"meta"`
}

// MemberResource is a member as answered: the user's id, Perch's name for
// them, and where to read them.
type MemberResource struct {
	Value   string `json:"value"`
	Display string `json:"display,omitempty"`
	Ref     string `json:"$ref,omitempty"`
	Type    string `json:"type"`
}

// RenderGroup makes the GroupResource of g with this id and meta; usersURL,
// when not "", is where the members are read ({usersURL}/{id}), and
// withMembers false leaves members out (excludedAttributes=members). It
// sets meta.ResourceType to "Group", meta.Version to GroupETag(g, id), and
// the times to UTC.
func RenderGroup(g Group, id string, meta Meta, usersURL string, withMembers bool) GroupResource {
	meta.ResourceType = "Group"
	meta.Version = GroupETag(g, id)
	meta.Created, meta.LastModified = meta.Created.UTC(), meta.LastModified.UTC()
	res := GroupResource{Schemas: []string{GroupSchema}, ID: id, ExternalID: g.ExternalID, DisplayName: g.DisplayName, Meta: meta}
	if withMembers {
		res.Members = make([]MemberResource, len(g.Members))
		for i, m := range g.Members {
			res.Members[i] = MemberResource{Value: m.Value, Display: m.Display, Type: "User"}
			if usersURL != "" {
				res.Members[i].Ref = strings.TrimSuffix(usersURL, "/") + "/" + m.Value
			}
		}
	}
	return res
}

// GroupETag is a weak entity tag of g's content, as ETag is of a User's:
// it changes whenever its name, externalId or a member (their id or the
// name shown for them) changes, and not with the order members are listed in.
func GroupETag(g Group, id string) string {
	h := sha256.New()
	writeString(h, "Group")
	writeString(h, id)
	writeString(h, g.DisplayName)
	writeString(h, g.ExternalID)
	members := slices.Clone(g.Members)
	slices.SortFunc(members, func(a, b Member) int { return strings.Compare(a.Value, b.Value) })
	writeUint(h, uint64(len(members)))
	for _, m := range members {
		writeString(h, m.Value)
		writeString(h, m.Display)
	}
	return `W/"` + hex.EncodeToString(h.Sum(nil)[:8]) + `"`
}
