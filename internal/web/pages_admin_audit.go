package web

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/perch-dev/perch"
)

// auditData is what the audit log page shows.
type auditData struct {
	Entries []*perch.AuditEntry
	Pager   pager
	// CSV and NDJSON are the API's exports of the same range and filters:
	// plain links, which the session cookie signs in.
	CSV, NDJSON string
	Filtered    bool // some filter is set
}

// auditLogPath is the API's filtered audit log.
const auditLogPath = "/api/v1/admin/audit-log-v2"

// AdminAudit shows the audit log, newest first, a page at a time, within
// a time range (the last 30 days unless one is set) and filtered by action
// prefix, actor and organisation. The range is typed in UTC.
func (d *Dashboard) AdminAudit(w http.ResponseWriter, r *http.Request, c *call) error {
	form := r.URL.Query()
	q := apiQuery(form, "action", "actor_id", "org_id")
	if v := formTime(form.Get("from"), false); v != "" {
		q.Set("from", v)
	}
	if v := formTime(form.Get("to"), true); v != "" {
		q.Set("to", v)
	}
	data := &auditData{Filtered: len(q) > 0}
	v := adminView("audit", "Audit log")
	v.Form, v.Data = form, data

	// The exports take the whole range: no cursor.
	export := func(format string) string {
		e := maps.Clone(q)
		e.Set("format", format)
		return withQuery(auditLogPath, e)
	}
	data.CSV, data.NDJSON = export("csv"), export("ndjson")

	// The page's cursor, and its size for whoever sets one in the address.
	maps.Copy(q, apiQuery(form, "cursor", "limit"))
	next, err := c.api.CallPage(r.Context(), withQuery(auditLogPath, q), &data.Entries)
	if perch.ErrorCode(err) == perch.EBADREQUEST {
		// A range the API does not take: say why, beside the filters.
		v.Error = c.say(err)
		data.CSV, data.NDJSON = "", ""
		c.render(http.StatusBadRequest, "admin_audit", v)
		return nil
	}
	if err != nil {
		return err
	}
	data.Pager = pagerOf(r.URL, next)
	return c.page("admin_audit", v)
}

// auditChanges shows an entry's changes as lines, "key: value" or "key:
// from → to", in the order of their keys.
func auditChanges(changes map[string]any) []string {
	lines := make([]string, 0, len(changes))
	for _, k := range slices.Sorted(maps.Keys(changes)) {
		v := changes[k]
		if m, ok := v.(map[string]any); ok && len(m) == 2 {
			from, hasFrom := m["from"]
			to, hasTo := m["to"]
			if hasFrom && hasTo {
				lines = append(lines, k+": "+changeValue(from)+" → "+changeValue(to))
				continue
			}
		}
		lines = append(lines, k+": "+changeValue(v))
	}
	return lines
}

// changeValue is one value of a change, as a person reads it.
func changeValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "none"
	case string:
		if v == "" {
			return `""`
		}
		return v
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
