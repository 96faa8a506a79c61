package scim

import "strings"

// URNs of the discovery documents (RFC 7643 §8.7.2).
const (
	serviceProviderConfigSchema = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
	resourceTypeSchema          = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
	schemaSchema                = "urn:ietf:params:scim:schemas:core:2.0:Schema"
)

// docMeta is the meta of a discovery document, which has no times or version.
type docMeta struct {
	ResourceType string `json:"resourceType"`
	Location     string `json:"location"`
}

type supported struct {
	Supported bool `json:"supported"`
}

type serviceProviderConfig struct {
	Schemas        []string   `json:"schemas"`
	Patch          supported  `json:"patch"`
	Bulk           bulk       `json:"bulk"`
	Filter         filterInfo `json:"filter"`
	ChangePassword supported  `json:"changePassword"`
	Sort           supported  `json:"sort"`
	ETag           supported  `json:"etag"`
	AuthSchemes    []scheme   `json:"authenticationSchemes"`
	Meta           docMeta    `json:"meta"`
}

type bulk struct {
	Supported      bool `json:"supported"`
	MaxOperations  int  `json:"maxOperations"`
	MaxPayloadSize int  `json:"maxPayloadSize"`
}

type filterInfo struct {
	Supported  bool `json:"supported"`
	MaxResults int  `json:"maxResults"`
}

type scheme struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Primary     bool   `json:"primary"`
}

// maxResults is the most resources one list answers.
const maxResults = 200

// ServiceProviderConfig is the document of RFC 7643 §5 for Perch: PATCH
// and ETags supported, filters of up to 200 results a page, no bulk, sort or
// password change, and the organisation's SCIM token as a Bearer token.
func ServiceProviderConfig(baseURL string) any {
	return serviceProviderConfig{
		Schemas:        []string{serviceProviderConfigSchema},
		Patch:          supported{true},
		Bulk:           bulk{},
		Filter:         filterInfo{Supported: true, MaxResults: maxResults},
		ChangePassword: supported{false},
		Sort:           supported{false},
		ETag:           supported{true},
		AuthSchemes: []scheme{{
			Type:        "oauthbearertoken",
			Name:        "SCIM token",
			Description: "The organisation's SCIM token as a Bearer token.",
			Primary:     true,
		}},
		Meta: docMeta{ResourceType: "ServiceProviderConfig", Location: trimBase(baseURL) + "/ServiceProviderConfig"},
	}
}

type resourceType struct {
	Schemas          []string          `json:"schemas"`
	ID               string            `json:"id"`
	Name             string            `json:"name"`
	Endpoint         string            `json:"endpoint"`
	Description      string            `json:"description"`
	Schema           string            `json:"schema"`
	SchemaExtensions []schemaExtension `json:"schemaExtensions"`
	Meta             docMeta           `json:"meta"`
}

type schemaExtension struct {
	Schema   string `json:"schema"`
	Required bool   `json:"required"`
}

// docList is a ListResponse of discovery documents.
type docList struct {
	Schemas      []string `json:"schemas"`
	TotalResults int      `json:"totalResults"`
	StartIndex   int      `json:"startIndex"`
	ItemsPerPage int      `json:"itemsPerPage"`
	Resources    []any    `json:"Resources"`
}

func newDocList(docs ...any) docList {
	return docList{Schemas: []string{ListSchema}, TotalResults: len(docs), StartIndex: 1, ItemsPerPage: len(docs), Resources: docs}
}

// ResourceTypes is the list of resource types (RFC 7643 §6): User and Group.
func ResourceTypes(baseURL string) any {
	return newDocList(userType(baseURL), groupType(baseURL))
}

// ResourceType is the resource type named id ("User" or "Group", compared
// without case); false when Perch serves no such type.
func ResourceType(baseURL, id string) (any, bool) {
	switch {
	case strings.EqualFold(id, "User"):
		return userType(baseURL), true
	case strings.EqualFold(id, "Group"):
		return groupType(baseURL), true
	}
	return nil, false
}

// userType is the User resource type, at /Users, with the enterprise
// extension as optional.
func userType(baseURL string) resourceType {
	return resourceType{
		Schemas:          []string{resourceTypeSchema},
		ID:               "User",
		Name:             "User",
		Endpoint:         "/Users",
		Description:      "User Account",
		Schema:           UserSchema,
		SchemaExtensions: []schemaExtension{{Schema: EnterpriseSchema, Required: false}},
		Meta:             docMeta{ResourceType: "ResourceType", Location: trimBase(baseURL) + "/ResourceTypes/User"},
	}
}

// groupType is the Group resource type, at /Groups: an organisation's teams.
func groupType(baseURL string) resourceType {
	return resourceType{
		Schemas:          []string{resourceTypeSchema},
		ID:               "Group",
		Name:             "Group",
		Endpoint:         "/Groups",
		Description:      "Group: a team of the organisation",
		Schema:           GroupSchema,
		SchemaExtensions: []schemaExtension{},
		Meta:             docMeta{ResourceType: "ResourceType", Location: trimBase(baseURL) + "/ResourceTypes/Group"},
	}
}

type schemaDoc struct {
	Schemas     []string    `json:"schemas"`
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Attributes  []attribute `json:"attributes"`
	Meta        docMeta     `json:"meta"`
}

// attribute is an attribute definition (RFC 7643 §7).
type attribute struct {
	Name            string      `json:"name"`
	Type            string      `json:"type"`
	MultiValued     bool        `json:"multiValued"`
	Description     string      `json:"description"`
	Required        bool        `json:"required"`
	CaseExact       bool        `json:"caseExact"`
	Mutability      string      `json:"mutability"`
	Returned        string      `json:"returned"`
	Uniqueness      string      `json:"uniqueness"`
	CanonicalValues []string    `json:"canonicalValues,omitempty"`
	SubAttributes   []attribute `json:"subAttributes,omitempty"`
}

// simple is a single-valued, optional, read-write attribute returned by default.
func simple(name, typ, description string) attribute {
	return attribute{Name: name, Type: typ, Description: description,
		Mutability: "readWrite", Returned: "default", Uniqueness: "none"}
}

// userAttributes are the User schema's attributes as Perch serves them.
func userAttributes() []attribute {
	userName := simple("userName", "string", "The user's unique identifier, their email address.")
	userName.Required, userName.Uniqueness = true, "server"
	externalID := simple("externalId", "string", "The identity provider's identifier for the user.")
	externalID.CaseExact = true
	name := simple("name", "complex", "The components of the user's name.")
	name.SubAttributes = []attribute{
		simple("formatted", "string", "The full name, formatted for display."),
		simple("familyName", "string", "The family name."),
		simple("givenName", "string", "The given name."),
		simple("middleName", "string", "The middle name."),
		simple("honorificPrefix", "string", "The honorific prefix, e.g. Ms."),
		simple("honorificSuffix", "string", "The honorific suffix, e.g. III."),
	}
	emails := simple("emails", "complex", "The user's email addresses.")
	emails.MultiValued = true
	emailType := simple("type", "string", "The kind of address.")
	emailType.CanonicalValues = []string{"work", "home", "other"}
	emails.SubAttributes = []attribute{
		simple("value", "string", "The email address."),
		emailType,
		simple("primary", "boolean", "Whether this is the address to use; at most one is."),
		simple("display", "string", "The address as shown."),
	}
	roles := simple("roles", "complex", `The user's role in the organisation, one of owner, admin or member (any case); other values are ignored. Absent: the role stays as it is.`)
	roles.MultiValued = true
	roleValue := simple("value", "string", "owner, admin or member.")
	roleValue.CanonicalValues = []string{"owner", "admin", "member"}
	roles.SubAttributes = []attribute{
		roleValue,
		simple("primary", "boolean", "The entry whose role counts when several name one; else the most privileged counts."),
	}
	return []attribute{
		userName,
		externalID,
		name,
		simple("displayName", "string", "The name to show for the user."),
		emails,
		simple("active", "boolean", "Whether the user may sign in."),
		simple("title", "string", "The user's job title."),
		roles,
	}
}

// enterpriseAttributes are the enterprise extension's attributes Perch keeps.
func enterpriseAttributes() []attribute {
	manager := simple("manager", "complex", "The user's manager.")
	manager.SubAttributes = []attribute{simple("value", "string", "The identity provider's id of the manager.")}
	return []attribute{
		simple("employeeNumber", "string", "The number the organisation gives the user."),
		simple("department", "string", "The user's department."),
		manager,
	}
}

// groupAttributes are the Group schema's attributes as Perch serves them.
func groupAttributes() []attribute {
	displayName := simple("displayName", "string", "The team's name, unique in the organisation without regard to case.")
	displayName.Required, displayName.Uniqueness = true, "server"
	externalID := simple("externalId", "string", "The identity provider's identifier for the group.")
	externalID.CaseExact = true
	members := simple("members", "complex", "The team's members: users of the organisation.")
	members.MultiValued = true
	value := simple("value", "string", "The user's id.")
	value.Mutability, value.CaseExact = "immutable", true
	display := simple("display", "string", "The user's name.")
	display.Mutability = "readOnly"
	ref := simple("$ref", "reference", "Where the user is read.")
	ref.Mutability = "immutable"
	memberType := simple("type", "string", "Always User.")
	memberType.Mutability, memberType.CanonicalValues = "immutable", []string{"User"}
	members.SubAttributes = []attribute{value, display, ref, memberType}
	return []attribute{displayName, externalID, members}
}

func schemas(baseURL string) []schemaDoc {
	base := trimBase(baseURL)
	return []schemaDoc{{
		Schemas:     []string{schemaSchema},
		ID:          UserSchema,
		Name:        "User",
		Description: "User Account",
		Attributes:  userAttributes(),
		Meta:        docMeta{ResourceType: "Schema", Location: base + "/Schemas/" + UserSchema},
	}, {
		Schemas:     []string{schemaSchema},
		ID:          GroupSchema,
		Name:        "Group",
		Description: "Group: a team of the organisation",
		Attributes:  groupAttributes(),
		Meta:        docMeta{ResourceType: "Schema", Location: base + "/Schemas/" + GroupSchema},
	}, {
		Schemas:     []string{schemaSchema},
		ID:          EnterpriseSchema,
		Name:        "EnterpriseUser",
		Description: "Enterprise User; of its attributes Perch keeps employeeNumber, department and manager",
		Attributes:  enterpriseAttributes(),
		Meta:        docMeta{ResourceType: "Schema", Location: base + "/Schemas/" + EnterpriseSchema},
	}}
}

// Schemas is the list of the schemas Perch serves (RFC 7643 §7): the User
// and Group schemas and the enterprise User extension, each with the
// attributes Perch keeps.
func Schemas(baseURL string) any {
	var docs []any
	for _, s := range schemas(baseURL) {
		docs = append(docs, s)
	}
	return newDocList(docs...)
}

// Schema is the schema whose id, a URN compared without case, is id; false
// when Perch serves no such schema.
func Schema(baseURL, id string) (any, bool) {
	for _, s := range schemas(baseURL) {
		if strings.EqualFold(s.ID, id) {
			return s, true
		}
	}
	return nil, false
}

// trimBase drops a trailing slash from a base URL so that paths join cleanly.
func trimBase(baseURL string) string {
	return strings.TrimSuffix(baseURL, "/")
}
