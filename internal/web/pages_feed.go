package web

import (
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"

	"github.com/perch-dev/perch"
)

// The feed's script renders notifications itself, from the history and
// the WebSocket. What it must not do itself it asks these routes for: a
// Markdown message as HTML (rendered and sanitised here, never in the
// browser) and the running of an http action. They answer the script, not
// a person: JSON in the API's shape, or an HTML fragment; errors as the
// API's error shape, 401 when the session is over so that the script
// renews it.

// Script serves a route the pages' script fetches: the pages' headers and
// cross-origin check, the session's access token, and errors as JSON.
func (d *Dashboard) Script(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "same-origin")
		w.Header().Set("Content-Security-Policy", d.csp)
		w.Header().Set("Cache-Control", "no-store")
		c := d.newCall(w, r)
		var err error
		switch {
		case r.Method != http.MethodGet && r.Method != http.MethodHead && d.checkOrigin(r) != nil:
			err = d.checkOrigin(r)
		case !c.signed:
			err = perch.Errorf(perch.EUNAUTHORIZED, "Sign in to see this.")
		default:
			err = h(w, r, c)
		}
		if err != nil {
			d.scriptError(w, r, err)
		}
	})
}

// scriptError answers a script in the API's error shape.
func (d *Dashboard) scriptError(w http.ResponseWriter, r *http.Request, err error) {
	code := perch.ErrorCode(err)
	status := perch.HTTPStatus(code)
	msg := perch.ErrorMessage(err)
	// The API's answers say what they may (a 502's "could not be
	// reached"); an internal failure, nothing of itself.
	if code == perch.EINTERNAL {
		d.log.Error("dashboard script route failed", "path", r.URL.Path, "err", err)
		msg = "Something went wrong on our side. Please try again in a minute."
	}
	body := map[string]any{"code": code, "message": msg}
	if pe, ok := errors.AsType[*perch.Error](err); ok && len(pe.Fields) > 0 {
		body["fields"] = pe.Fields
	}
	writeJSON(w, status, map[string]any{"error": body})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// feedNotification is a notification as the feed's script gets it: as the
// API has it, with its Markdown message as HTML.
type feedNotification struct {
	*perch.Notification
	HTML template.HTML `json:"html,omitempty"`
}

// FeedHistory is GET /api/v1/notifications (same since and limit) for the
// feed: each Markdown message comes rendered, so that the page loads with
// one request.
func (d *Dashboard) FeedHistory(w http.ResponseWriter, r *http.Request, c *call) error {
	q := url.Values{}
	for _, k := range []string{"since", "limit"} {
		if v := r.URL.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	var list []*perch.Notification
	if err := c.do(http.MethodGet, "/api/v1/notifications?"+q.Encode(), nil, &list); err != nil {
		return err
	}
	out := make([]feedNotification, len(list))
	for i, n := range list {
		out[i] = feedNotification{Notification: n}
		if n.Markdown {
			out[i].HTML = markdownHTML(n.Message)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": out})
	return nil
}

// NotificationBody is a notification's message as an HTML fragment: its
// Markdown rendered (markdownHTML), or its text escaped. The script asks
// for it when a Markdown notification arrives over the WebSocket.
func (d *Dashboard) NotificationBody(w http.ResponseWriter, r *http.Request, c *call) error {
	n, err := c.notification(r.PathValue("id"))
	if err != nil {
		return err
	}
	body := template.HTML(template.HTMLEscapeString(n.Message))
	if n.Markdown {
		body = markdownHTML(n.Message)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(body))
	return nil
}

// notification is the one notification id the user sees. The history
// pages forward from an id, so the page of one after id-1 is id itself
// when the user sees it (and another one, or none, when not).
func (c *call) notification(id string) (*perch.Notification, error) {
	notFound := perch.Errorf(perch.ENOTFOUND, "There is no notification %s.", id)
	v, err := strconv.ParseInt(id, 10, 64)
	if err != nil || v < 1 || strconv.FormatInt(v, 10) != id {
		return nil, notFound
	}
	list, err := c.api.Notifications(c.r.Context(), strconv.FormatInt(v-1, 10), 1)
	if err != nil {
		return nil, err
	}
	if len(list) != 1 || list[0].ID != id {
		return nil, notFound
	}
	return list[0], nil
}

// RunAction runs an http action of a notification through the API (POST
// /api/v1/notifications/{id}/actions/{action_id}), for the feed's button,
// and answers what the target said: {status, ok}.
func (d *Dashboard) RunAction(w http.ResponseWriter, r *http.Request, c *call) error {
	var res perch.ActionResult
	path := "/api/v1/notifications/" + url.PathEscape(r.PathValue("id")) + "/actions/" + url.PathEscape(r.PathValue("action"))
	if err := c.do(http.MethodPost, path, nil, &res); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": res})
	return nil
}
