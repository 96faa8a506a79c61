package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/perch-dev/perch"
)

// ScheduledNotifications lists the signed-in user's pending scheduled
// notifications (sent through webhook tokens they own), soonest first.
func (c *Client) ScheduledNotifications(ctx context.Context) ([]*perch.ScheduledNotification, error) {
	var out []*perch.ScheduledNotification
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/notifications/scheduled", out: &out}); err != nil {
		return nil, err
	}
	return out, nil
}

// CancelScheduled cancels one of the user's pending scheduled
// notifications: it is never delivered. Errors: ENOTFOUND (not the user's
// webhook tokens', delivered, cancelled already), ECONFLICT (being
// delivered at this moment).
func (c *Client) CancelScheduled(ctx context.Context, id string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/v1/notifications/scheduled/" + url.PathEscape(id)})
}
