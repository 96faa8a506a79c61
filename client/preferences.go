package client

import (
	"context"
	"net/http"

	"github.com/perch-dev/perch"
)

// Preferences returns the user's preferences: what pops up on their
// clients, and the mail of what they have not read.
func (c *Client) Preferences(ctx context.Context) (*perch.Preferences, error) {
	var out perch.Preferences
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/users/me/preferences", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetPreferences replaces the user's preferences with p (to snooze, say, set
// SnoozeUntil on what Preferences returned) and returns them as stored;
// every client of the user hears of it (EventPreferences). Errors:
// EVALIDATION with a problem per field.
func (c *Client) SetPreferences(ctx context.Context, p *perch.Preferences) (*perch.Preferences, error) {
	var out perch.Preferences
	if err := c.do(ctx, request{method: http.MethodPut, path: "/api/v1/users/me/preferences", body: p, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
