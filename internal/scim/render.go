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
	Meta        Meta     `json:"meta"`
}

// Render makes the Resource of u with this id and meta. It sets
// meta.ResourceType to "User", meta.Version to ETag(u, id), and the times
// to UTC.
func Render(u User, id string, meta Meta) Resource {
	meta.ResourceType = "User"
	meta.Version = ETag(u, id)
	meta.Created = meta.Created.UTC()
	meta.LastModified = meta.LastModified.UTC()
	return Resource{
		Schemas:     []string{UserSchema},
		ID:          id,
		ExternalID:  u.ExternalID,
		UserName:    u.UserName,
		Name:        u.Name,
		DisplayName: u.DisplayName,
		Emails:      slices.Clone(u.Emails),
		Active:      u.Active,
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
		u.Name.MiddleName, u.Name.HonorificPrefix, u.Name.HonorificSuffix} {
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

// ListResponse is a page of resources (RFC 7644 §3.4.2). Resources is
// never null in JSON: an empty page is [].
type ListResponse struct {
	Schemas      []string   `json:"schemas"`
	TotalResults int        `json:"totalResults"`
	StartIndex   int        `json:"startIndex"`
	ItemsPerPage int        `json:"itemsPerPage"`
	Resources    []Resource `json:"Resources"`
}

// NewList makes the page of items starting at startIndex (1-based) out of
// total results.
func NewList(total, startIndex int, items []Resource) ListResponse {
	if items == nil {
		items = []Resource{}
	}
	return ListResponse{
		Schemas:      []string{ListSchema},
		TotalResults: total,
		StartIndex:   startIndex,
		ItemsPerPage: len(items),
		Resources:    items,
	}
}
