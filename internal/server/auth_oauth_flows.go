package server

import (
	"encoding/base64"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/secrets"
)

// A flow's PKCE verifier and OpenID nonce are what finish a sign-in with
// the provider's code: whoever holds them and a code (from a referrer, a
// log, a proxy) signs in as the person who started it. The database keeps
// the flow under the hash of its state, so it keeps them sealed under a key
// derived from the state itself (secrets.SealWithToken), which only the
// browser's cookie and the provider's redirect carry. Not under the
// server's key: a copy of the database with the key file beside it opens
// nothing, and a PostgreSQL server without PERCH_SECRET_KEY still signs in.

// Purposes of the values sealed under a flow's state.
const (
	flowVerifier = "oauth flow: pkce verifier"
	flowNonce    = "oauth flow: openid nonce"
)

// stateSealedPrefix marks a value sealed under a flow's state, apart from
// what is sealed under the server's key (sealedPrefix).
const stateSealedPrefix = "state-sealed:"

// sealFlow is f as the database keeps it, its verifier and nonce sealed
// under state.
func sealFlow(state string, f perch.OAuthFlow) perch.OAuthFlow {
	f.Verifier = sealFlowValue(state, flowVerifier, f.Verifier)
	f.Nonce = sealFlowValue(state, flowNonce, f.Nonce)
	return f
}

func sealFlowValue(state, purpose, plain string) string {
	if plain == "" {
		return ""
	}
	return stateSealedPrefix + base64.RawStdEncoding.EncodeToString(secrets.SealWithToken(state, purpose, []byte(plain)))
}

// openFlow opens what sealFlow sealed. A flow that cannot be opened (kept
// in the clear by an older Perch during an upgrade, or altered) is
// ENOTFOUND, as one never made is: the sign-in starts again.
func openFlow(state string, f *perch.OAuthFlow) (*perch.OAuthFlow, error) {
	out := *f
	var err error
	if out.Verifier, err = openFlowValue(state, flowVerifier, f.Verifier); err == nil {
		out.Nonce, err = openFlowValue(state, flowNonce, f.Nonce)
	}
	if err != nil || out.Verifier == "" {
		return nil, perch.Errorf(perch.ENOTFOUND, "Sign-in not found.")
	}
	return &out, nil
}

func openFlowValue(state, purpose, stored string) (string, error) {
	if stored == "" {
		return "", nil
	}
	enc, ok := strings.CutPrefix(stored, stateSealedPrefix)
	if !ok {
		return "", secrets.ErrDamaged
	}
	raw, err := base64.RawStdEncoding.DecodeString(enc)
	if err != nil {
		return "", secrets.ErrDamaged
	}
	plain, err := secrets.OpenWithToken(state, purpose, raw)
	return string(plain), err
}
