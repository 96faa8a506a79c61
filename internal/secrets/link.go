package secrets

import (
	"crypto/hmac"
	"encoding/base64"
	"strings"
)

// linkMACSize is how much of the HMAC a link token carries: 128 bits.
const linkMACSize = 16

// LinkToken is a token for a mailed link that acts for id (a user's) and
// only for purpose (leaving the newsletter, turning the unread mail off):
// id and an HMAC of it under the server's key, in URL-safe text. It does not
// expire; a new key voids them all.
func (b *Box) LinkToken(purpose, id string) string {
	mac := b.Sign(purpose, []byte(id))[:linkMACSize]
	return id + "." + base64.RawURLEncoding.EncodeToString(mac)
}

// LinkTokenID returns the id a LinkToken for purpose names, when it is one
// this key signed (compared in constant time).
func (b *Box) LinkTokenID(purpose, token string) (id string, ok bool) {
	id, encoded, found := strings.Cut(token, ".")
	if !found || id == "" {
		return "", false
	}
	mac, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil || len(mac) != linkMACSize {
		return "", false
	}
	return id, hmac.Equal(mac, b.Sign(purpose, []byte(id))[:linkMACSize])
}
