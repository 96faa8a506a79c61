package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/perch-dev/perch"
)

// CreateAPIToken makes a personal API token that may do everything the
// user may, with no expiry, and returns it with its raw value (pat_...),
// which is shown this once. Errors: EBADREQUEST for a missing or
// over-long label.
func (c *Client) CreateAPIToken(ctx context.Context, label string) (*perch.APIToken, string, error) {
	return c.CreateLimitedAPIToken(ctx, APITokenInput{Label: label})
}

// APITokenInput describes an API token to create.
type APITokenInput struct {
	Label     string             `json:"label"`
	ExpiresAt *time.Time         `json:"expires_at,omitzero"` // nil: never
	Scopes    []perch.TokenScope `json:"scopes,omitzero"`     // nil: everything the user may do; empty is refused, never widened to everything
}

// CreateLimitedAPIToken makes an API token limited by in's expiry and
// scopes (each scope brings the ones below it: the token answered lists
// them all) and returns it with its raw value, shown this once. Errors:
// EBADREQUEST for a missing or over-long label, EVALIDATION for an expiry
// not in the future or unknown, repeated or no scopes.
func (c *Client) CreateLimitedAPIToken(ctx context.Context, in APITokenInput) (*perch.APIToken, string, error) {
	var out struct {
		Token    *perch.APIToken `json:"token"`
		RawToken string          `json:"raw_token"`
	}
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/tokens", body: in, out: &out})
	if err != nil {
		return nil, "", err
	}
	return out.Token, out.RawToken, nil
}

// APITokens lists the signed-in user's API tokens.
func (c *Client) APITokens(ctx context.Context) ([]*perch.APIToken, error) {
	var out []*perch.APIToken
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/tokens", out: &out}); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteAPIToken deletes one of the user's API tokens; it stops working at
// once. Errors: ENOTFOUND.
func (c *Client) DeleteAPIToken(ctx context.Context, id string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/v1/tokens/" + url.PathEscape(id)})
}

// WebhookTokenInput describes a webhook token to create.
type WebhookTokenInput struct {
	Label  string `json:"label"`
	Sender string `json:"sender"`            // perch.SenderIncidents, SenderCodeHost, SenderMonitoring or SenderInbound
	Scope  string `json:"scope"`             // perch.ScopeUser, ScopeTeam or ScopeOrg
	TeamID string `json:"team_id,omitempty"` // with ScopeTeam
}

// CreatedWebhookToken is a new webhook token with the two values that carry
// its secret, shown this once.
type CreatedWebhookToken struct {
	Token    *perch.WebhookToken `json:"token"`
	RawToken string              `json:"raw_token"` // whk_...
	URL      string              `json:"url"`       // the sender's receiver URL, token included
}

// CreateWebhookToken makes a token for one sender's deliveries. Errors:
// EBADREQUEST or EVALIDATION for bad input, EFORBIDDEN for a team or org
// scope the user may not address.
func (c *Client) CreateWebhookToken(ctx context.Context, in WebhookTokenInput) (*CreatedWebhookToken, error) {
	var out CreatedWebhookToken
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/webhook-tokens", body: in, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// WebhookTokens lists the webhook tokens the user can see.
func (c *Client) WebhookTokens(ctx context.Context) ([]*perch.WebhookToken, error) {
	var out []*perch.WebhookToken
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/webhook-tokens", out: &out}); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteWebhookToken deletes a webhook token; deliveries with it are refused
// from then on. Errors: ENOTFOUND, EFORBIDDEN.
func (c *Client) DeleteWebhookToken(ctx context.Context, id string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/v1/webhook-tokens/" + url.PathEscape(id)})
}
