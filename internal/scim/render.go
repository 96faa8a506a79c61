package scim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"slices"
	"time"
)

// Meta is a resource's metadata (RFC 7643 §3.1).
type Meta struct {
	ResourceType string    `json:"resourceType"`
	Created      time.Time `json:"created"`
	LastModified time.Time `json:"lastModified"`
	Location     string    `json:"location"`
	Version      string    `json:"version"`
}

// Resource is a User as answered to the identity provider.
type Resource struct {
	Schemas     []string `json:"schemas"`
	ID          string   `json:"id"`
	ExternalID  string   `json:"externalId,omitempty"`
	UserName    string   `json:"userName"`
	Name        Name     `json:"name,omitzero"`
	DisplayName string   `json:"displayName,omitempty"`
	Emails      []Email  `json:"emails,omitempty"`
	Active      bool     `json:"active"`
	Title       string   `json:"title,omitempty"`
	// Roles is the organisation role, as the one entry of roles.
	Roles      []RoleResource      `json:"roles,omitempty"`
	Enterprise *EnterpriseResource `json:"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User,omitempty"`
	Meta       Meta                `json:"meta"`
}

// Render makes the Resource of u with this id and meta. It sets
// meta.ResourceType to "User", meta.Version to ETag(u, id), and the times
// to UTC.
func Render(u User, id string, meta Meta) Resource {
	meta.ResourceType = "User"
	meta.Version = ETag(u, id)
	meta.Created = meta.Created.UTC()
	meta.LastModified = meta.LastModified.UTC()
	schemas := []string{UserSchema}
	if !u.Enterprise.IsZero() {
		schemas = append(schemas, EnterpriseSchema)
	}
	return Resource{
		Schemas:     schemas,
		ID:          id,
		ExternalID:  u.ExternalID,
		UserName:    u.UserName,
		Name:        u.Name,
		DisplayName: u.DisplayName,
		Emails:      slices.Clone(u.Emails),
		Active:      u.Active,
		Title:       u.Title,
		Roles:       renderRoles(u.Role),
		Enterprise:  renderEnterprise(u.Enterprise),
		Meta:        meta,
	}
}

// ETag is a weak entity tag of u's content: W/"<16 hex digits of the SHA-256
// of id and every attribute Perch keeps>". It changes whenever anything
// Render shows, meta times aside, changes.
func ETag(u User, id string) string {
	h := sha256.New()
	// Each string is preceded by its length, so no two users encode alike.
	for _, s := range []string{id, u.UserName, u.ExternalID, u.DisplayName,
		u.Name.Formatted, u.Name.FamilyName, u.Name.GivenName,
		u.Name.MiddleName, u.Name.HonorificPrefix, u.Name.HonorificSuffix,
		u.Title, u.Role, u.Enterprise.Department, u.Enterprise.EmployeeNumber, u.Enterprise.Manager} {
		writeString(h, s)
	}
	writeBool(h, u.Active)
	writeUint(h, uint64(len(u.Emails)))
	for _, e := range u.Emails {
		writeString(h, e.Value)
		writeString(h, e.Type)
		writeString(h, e.Display)
		writeBool(h, e.Primary)
	}
	return `W/"` + hex.EncodeToString(h.Sum(nil)[:8]) + `"`
}

func writeUint(h hash.Hash, n uint64) {
	h.Write(binary.BigEndian.AppendUint64(nil, n))
}

func writeString(h hash.Hash, s string) {
	writeUint(h, uint64(len(s)))
	h.Write([]byte(s))
}

func writeBool(h hash.Hash, b bool) {
	if b {
		h.Write([]byte{1})
	} else {
		h.Write([]byte{0})
	}
}

// ListResponse is a page of resources, Users or Groups (RFC 7644 §3.4.2).
// Resources is never null in JSON: an empty page is [].
type ListResponse[T any] struct {
	Schemas      []string `json:"schemas"`
	TotalResults int      `json:"totalResults"`
	StartIndex   int      `json:"startIndex"`
	ItemsPerPage int      `json:"itemsPerPage"`
	Resources    []T      `json:"Resources"`
}

// NewList makes the page of items starting at startIndex (1-based) out of
// total results.
func NewList[T any](total, startIndex int, items []T) ListResponse[T] {
	if items == nil {
		items = []T{}
	}
	return ListResponse[T]{
		Schemas:      []string{ListSchema},
		TotalResults: total,
		StartIndex:   startIndex,
		ItemsPerPage: len(items),
		Resources:    items,
	}
}
