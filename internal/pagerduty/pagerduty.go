// Package pagerduty is the one call Perch makes to PagerDuty's REST API v2:
// changing an incident's status (acknowledge, resolve) with the REST API
// key an organisation stored, as PagerDuty's reference for PUT
// /incidents/{id} describes it. pagerdutyfake is the tests' fake of that
// endpoint.
package pagerduty

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultBaseURL is PagerDuty's REST API (PERCH_PAGERDUTY_API_URL replaces
// it, for tests and PagerDuty's EU service region).
const DefaultBaseURL = "https://api.pagerduty.com"

// Incident statuses a change may set.
const (
	StatusAcknowledged = "acknowledged"
	StatusResolved     = "resolved"
)

// Timeout bounds one call, the answer's body included.
const Timeout = 10 * time.Second

// maxAnswer is how much of PagerDuty's answer is read; the body is only
// drained, so that the connection can be reused.
const maxAnswer = 64 << 10

// Client calls PagerDuty's REST API at BaseURL.
type Client struct {
	base string
	http *http.Client
}

// New returns a client of the REST API at baseURL ("" is DefaultBaseURL),
// with its own transport and the Timeout.
func New(baseURL string) (*Client, error) {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" || u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("pagerduty: the API URL %q is not an http(s) URL", baseURL)
	}
	return &Client{
		base: strings.TrimSuffix(baseURL, "/"),
		http: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: Timeout},
	}, nil
}

// ErrUnreachable wraps the errors of a call that got no answer.
var ErrUnreachable = errors.New("pagerduty: no answer")

// SetIncidentStatus changes incident's status (StatusAcknowledged or
// StatusResolved) as the PagerDuty user from (an e-mail address) with
// apiKey: PUT /incidents/{id} with Authorization "Token token=<key>", the
// version-2 Accept header, From, and the body {"incident": {"type":
// "incident_reference", "status": …}}. It answers PagerDuty's status code
// (200 when the change is made; 401 for a key PagerDuty refuses, 404 for an
// incident it does not know), or an error wrapping ErrUnreachable when no
// answer came.
func (c *Client) SetIncidentStatus(ctx context.Context, apiKey, from, incident, status string) (int, error) {
	if status != StatusAcknowledged && status != StatusResolved {
		return 0, fmt.Errorf("pagerduty: %q is not a status Perch sets", status)
	}
	body, err := json.Marshal(map[string]any{"incident": map[string]string{"type": "incident_reference", "status": status}})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.base+"/incidents/"+url.PathEscape(incident), bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Token token="+apiKey)
	req.Header.Set("Accept", "application/vnd.pagerduty+json;version=2")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("From", from)
	req.Header.Set("User-Agent", "Perch/1")
	res, err := c.http.Do(req)
	if err != nil {
		// The URL error would repeat the base URL and incident; neither
		// is secret, but the cause is all a caller needs.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return 0, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	defer res.Body.Close()
	io.Copy(io.Discard, io.LimitReader(res.Body, maxAnswer))
	return res.StatusCode, nil
}

// CloseIdleConnections closes the client's idle connections (at shutdown).
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }
