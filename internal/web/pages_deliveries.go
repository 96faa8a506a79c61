package web

import (
	"net/http"
	"net/url"

	"github.com/perch-dev/perch"
)

// The Failed deliveries page (/org/workflows/failed-deliveries): the
// forwards and e-mails of the organisation's workflows that were refused or
// given up, with a Retry button each. Owners and admins; the API decides.

// deliveriesPath is the API's path of the failed deliveries, or of what
// follows one of them.
func deliveriesPath(id string, rest ...string) string {
	p := "/api/v1/org/workflows/failed-deliveries"
	if id != "" {
		p += "/" + url.PathEscape(id)
	}
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// deliveriesData is what the Failed deliveries page shows.
type deliveriesData struct {
	Off        bool // the workflows feature is off for this user
	Deliveries []*perch.FailedDelivery
	Older      string // the next page's address; "" on the last
	Newest     string // the first page's address; "" on the first
}

// FailedDeliveries lists the organisation's refused and given-up
// deliveries, newest first, a page at a time.
func (d *Dashboard) FailedDeliveries(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.deliveriesPage(http.StatusOK, view{})
}

// deliveriesPage renders the page with status and v's messages.
func (c *call) deliveriesPage(status int, v view) error {
	data := &deliveriesData{}
	v.Title, v.Nav, v.Data = "Failed deliveries", "workflows", data
	if !c.featureFlags()[featureWorkflows] {
		data.Off = true
		c.render(http.StatusOK, "failed_deliveries", v)
		return nil
	}
	next, err := c.api.CallPage(c.r.Context(), withQuery(deliveriesPath(""), apiQuery(c.r.URL.Query(), "cursor", "limit")), &data.Deliveries)
	switch perch.ErrorCode(err) {
	case "":
	case perch.EBADREQUEST, perch.EVALIDATION, perch.EFORBIDDEN:
		v.Error = c.say(err)
		status = perch.HTTPStatus(perch.ErrorCode(err))
	case perch.EFEATUREDISABLED:
		data.Off = true
	default:
		return err
	}
	p := pagerOf(c.r.URL, next)
	data.Older, data.Newest = p.Next, p.First
	c.render(status, "failed_deliveries", v)
	return nil
}

// RetryDelivery queues a failed delivery again and comes back to the list,
// with the API's message when it refused (a refused forward, say).
func (d *Dashboard) RetryDelivery(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := c.do(http.MethodPost, deliveriesPath(r.PathValue("id"), "retry"), nil, nil); err != nil {
		if code := perch.ErrorCode(err); code == perch.EINTERNAL || code == perch.EUNAVAILABLE {
			return err
		}
		return c.deliveriesPage(perch.HTTPStatus(perch.ErrorCode(err)), view{Error: c.say(err)})
	}
	return c.redirect("/org/workflows/failed-deliveries", "The delivery is queued again: it is tried at once, and for 24 hours if it fails.")
}
