package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/perch-dev/perch"
)

// Notifications returns the user's notifications after the one with id since,
// oldest first, or the newest page when since is "". A limit of 0 leaves the
// page size to the server.
func (c *Client) Notifications(ctx context.Context, since string, limit int) ([]*perch.Notification, error) {
	q := url.Values{}
	if since != "" {
		q.Set("since", since)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out []*perch.Notification
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/notifications", query: q, out: &out}); err != nil {
		return nil, err
	}
	return out, nil
}

// MarkRead marks notifications read for the user; the user's other clients
// hear of it (EventRead). Marking none sends nothing.
func (c *Client) MarkRead(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return c.do(ctx, request{method: http.MethodPost, path: "/api/v1/notifications/read", body: map[string][]string{"ids": ids}})
}

// MarkAllRead marks every notification of the user read.
func (c *Client) MarkAllRead(ctx context.Context) error {
	return c.do(ctx, request{method: http.MethodPost, path: "/api/v1/notifications/read", body: map[string]bool{"all": true}})
}

// InboundEvent is what the generic receiver takes. Only Title is required;
// the server defaults Tab to "Inbound", Severity to info and Priority to
// the severity's (high for an error, else default).
type InboundEvent struct {
	Tab      string `json:"tab,omitempty"`
	Title    string `json:"title"`
	Message  string `json:"message,omitempty"`
	Severity string `json:"severity,omitempty"` // perch.SeverityInfo, SeverityWarning or SeverityError
	URL      string `json:"url,omitempty"`      // an http(s) link to what the event is about

	Priority string          `json:"priority,omitempty"` // 1–5 or min, low, default, high, urgent
	Tags     []string        `json:"tags,omitempty"`     // at most perch.MaxTags
	Icon     string          `json:"icon,omitempty"`     // an https URL
	Markdown bool            `json:"markdown,omitempty"` // Message is Markdown
	Actions  []InboundAction `json:"actions,omitempty"`  // at most perch.MaxActions
	// DeliverAt (RFC 3339) or Delay (a Go duration such as "30m"), at
	// most 7 days ahead, schedule the notification.
	DeliverAt string `json:"deliver_at,omitempty"`
	Delay     string `json:"delay,omitempty"`
}

// InboundAction is a button on an inbound notification: a view action
// opens URL; an http action is a request the server sends when someone
// runs it, with the method, headers and body given here, which no client
// ever sees.
type InboundAction struct {
	Type    string            `json:"type"` // perch.ActionView or perch.ActionHTTP
	Label   string            `json:"label"`
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

// Send delivers e through the generic receiver (POST /webhooks/inbound) with
// a webhook token (whk_...), which decides who gets it. With webhookToken ""
// the event is a broadcast, if the server allows those. It returns once the
// server has stored the notification. Errors: EBADREQUEST (no title),
// EUNAUTHORIZED or EFORBIDDEN (the token).
func (c *Client) Send(ctx context.Context, webhookToken string, e InboundEvent) error {
	_, err := c.Deliver(ctx, webhookToken, e)
	return err
}

// Receipt is a receiver's answer to a delivery.
type Receipt struct {
	IDs       []string `json:"ids"`                 // the stored notifications
	Duplicate bool     `json:"duplicate,omitempty"` // a redelivery: IDs are the first delivery's
	Ignored   string   `json:"ignored,omitempty"`   // why nothing was stored, when nothing was
}

// Deliver is Send that also returns the receiver's receipt, with the ids of
// the stored notifications.
func (c *Client) Deliver(ctx context.Context, webhookToken string, e InboundEvent) (*Receipt, error) {
	q := url.Values{}
	if webhookToken != "" {
		q.Set("token", webhookToken)
	}
	var out Receipt
	if err := c.do(ctx, request{method: http.MethodPost, path: "/webhooks/inbound", query: q, body: e, out: &out, bare: true, anonymous: true}); err != nil {
		return nil, err
	}
	return &out, nil
}
