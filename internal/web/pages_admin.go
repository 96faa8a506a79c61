package web

import (
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// The Admin section is for platform admins. Its link shows only for them,
// but the pages rely on the API: for anyone else every call answers 403,
// and the page is the error page with it.

// adminView starts a view of a page of the Admin section.
func adminView(section, title string) view {
	return view{Title: title, Nav: "admin", Section: section}
}

// pager holds the links of a list shown a page at a time.
type pager struct {
	Next  string // the next page's address; "" on the last page
	First string // the first page's address; "" on the first page
}

// pagerOf is the pager of the list at u, whose next page starts at next:
// the same address with the cursor changed, so filters and searches stay.
func pagerOf(u *url.URL, next string) pager {
	var p pager
	q := u.Query()
	if next != "" {
		q.Set("cursor", next)
		p.Next = withQuery(u.Path, q)
	}
	if u.Query().Get("cursor") != "" {
		q.Del("cursor")
		p.First = withQuery(u.Path, q)
	}
	return p
}

// apiQuery is the query of an API list: the keys of the page's query that
// the API reads, those that are set.
func apiQuery(from url.Values, keys ...string) url.Values {
	q := url.Values{}
	for _, k := range keys {
		if v := strings.TrimSpace(from.Get(k)); v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// withQuery is path with q, when q has anything.
func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// Layouts a form's date and time fields send: <input type=datetime-local>,
// with or without seconds, and <input type=date>.
const (
	localMinute = "2006-01-02T15:04"
	localSecond = "2006-01-02T15:04:05"
	dateOnly    = "2006-01-02"
)

// formTime reads a time typed into a form, in UTC, as the API takes it (RFC
// 3339). A date alone is the start of that day, or, with endOfDay, the start
// of the next, so that "to 31 January" takes in the whole of it. Text that
// is none of these is passed on as it is, for the API to refuse in its own
// words; "" stays "".
func formTime(v string, endOfDay bool) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return ""
	}
	if t, err := time.Parse(dateOnly, v); err == nil {
		if endOfDay {
			t = t.AddDate(0, 0, 1)
		}
		return t.Format(time.RFC3339)
	}
	for _, layout := range []string{localMinute, localSecond, time.RFC3339} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC().Format(time.RFC3339)
		}
	}
	return v
}

// fieldTime is t as a datetime-local field shows it, in UTC.
func fieldTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(localMinute)
}

// failed reports whether err is the server's fault rather than something a
// page can show and go on: those get the error page.
func failed(err error) bool {
	switch perch.ErrorCode(err) {
	case perch.EINTERNAL, perch.EUNAVAILABLE:
		return true
	}
	return false
}

// fieldsOf are the per-field problems of a refusal, if it has any.
func fieldsOf(err error) map[string]string {
	var pe *perch.Error
	if errors.As(err, &pe) {
		return pe.Fields
	}
	return nil
}
