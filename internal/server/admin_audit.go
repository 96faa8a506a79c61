package server

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// defaultAuditSpan is the time range of a query of the log that names
// neither end.
const defaultAuditSpan = 30 * 24 * time.Hour

// adminAuditLog is the whole log, newest first, a page at a time.
func (s *Server) adminAuditLog(w http.ResponseWriter, r *http.Request) error {
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	entries, next, err := s.adminDB.AuditLog(r.Context(), perch.AuditFilter{Page: page})
	if err != nil {
		return err
	}
	return respondPage(w, entries, next)
}

// adminAuditLogV2 is the log within a time range, filtered, a page at a time
// or exported in full as CSV or NDJSON.
func (s *Server) adminAuditLogV2(w http.ResponseWriter, r *http.Request) error {
	f, err := s.auditFilter(r)
	if err != nil {
		return err
	}
	f.OrgID = r.URL.Query().Get("org_id")
	return s.answerAudit(w, r, f)
}

// orgAuditLog is the caller's organisation's part of the log, for its owners
// and admins; the filters of v2, the organisation fixed.
func (s *Server) orgAuditLog(w http.ResponseWriter, r *http.Request) error {
	f, err := s.auditFilter(r)
	if err != nil {
		return err
	}
	f.OrgID = principal(r).User.OrgID
	return s.answerAudit(w, r, f)
}

// auditFilter reads ?from=&to= (RFC 3339; to after from, at most 366 days
// apart; neither: the last 30 days up to now; from alone: the 30 days after
// it; to alone: the 30 days before it), ?action=
// (a prefix), ?actor_id= and the page.
func (s *Server) auditFilter(r *http.Request) (perch.AuditFilter, error) {
	q := r.URL.Query()
	page, err := pageOf(r)
	if err != nil {
		return perch.AuditFilter{}, err
	}
	f := perch.AuditFilter{Page: page, Action: strings.TrimSpace(q.Get("action")), ActorID: q.Get("actor_id")}
	for name, t := range map[string]*time.Time{"from": &f.From, "to": &f.To} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		if *t, err = time.Parse(time.RFC3339, v); err != nil {
			return f, perch.Errorf(perch.EBADREQUEST, "%s must be a time in RFC 3339, such as 2026-01-31T09:00:00Z.", name)
		}
	}
	// Without to, the range runs to now and takes what is written meanwhile.
	to, open := f.To, f.To.IsZero()
	switch {
	case f.From.IsZero() && open:
		to = s.now()
		f.From = to.Add(-defaultAuditSpan)
	case f.From.IsZero():
		f.From = to.Add(-defaultAuditSpan)
	case open:
		to = f.From.Add(defaultAuditSpan)
		f.To = to
	}
	if !to.After(f.From) {
		return f, perch.Errorf(perch.EBADREQUEST, "to must be after from.")
	}
	if to.Sub(f.From) > perch.MaxAuditSpan {
		return f, perch.Errorf(perch.EBADREQUEST, "from and to may be at most 366 days apart; export a longer period in parts.")
	}
	if len(f.Action) > 100 || len(f.ActorID) > 100 {
		return f, perch.Errorf(perch.EBADREQUEST, "action and actor_id are at most 100 characters.")
	}
	return f, nil
}

// Export formats of the audit log.
const (
	formatCSV    = "text/csv"
	formatNDJSON = "application/x-ndjson"
)

// exportFormat is the export a request asks for: by Accept, or by ?format=
// (csv, ndjson) for download links; "" for a page of JSON.
func exportFormat(r *http.Request) string {
	switch r.URL.Query().Get("format") {
	case "csv":
		return formatCSV
	case "ndjson":
		return formatNDJSON
	}
	for _, a := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(a))
		if err == nil && (mt == formatCSV || mt == formatNDJSON) {
			return mt
		}
	}
	return ""
}

// answerAudit answers a page of f, or the whole of it as an export.
func (s *Server) answerAudit(w http.ResponseWriter, r *http.Request, f perch.AuditFilter) error {
	format := exportFormat(r)
	if format == "" {
		entries, next, err := s.adminDB.AuditLog(r.Context(), f)
		if err != nil {
			return err
		}
		return respondPage(w, entries, next)
	}
	changes := map[string]any{"from": f.From, "format": format}
	if !f.To.IsZero() {
		changes["to"] = f.To
	}
	for k, v := range map[string]string{"action": f.Action, "actor_id": f.ActorID, "org_id": f.OrgID} {
		if v != "" {
			changes[k] = v
		}
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditLogExported, Target: perch.AuditTarget{Type: "audit_log"}, OrgID: f.OrgID, Changes: changes})
	return s.exportAudit(w, r, f, format)
}

// exportAudit streams every entry f selects: entries are read a chunk at a
// time and written through a small buffer, so memory stays flat however
// long the export. A failure once the answer has begun cannot be reported in
// it: the connection is cut, so the download is seen to be incomplete.
func (s *Server) exportAudit(w http.ResponseWriter, r *http.Request, f perch.AuditFilter, format string) error {
	ext := map[string]string{formatCSV: "csv", formatNDJSON: "ndjson"}[format]
	h := w.Header()
	h.Set("Content-Type", format+"; charset=utf-8")
	to := f.To
	if to.IsZero() {
		to = s.now()
	}
	h.Set("Content-Disposition", `attachment; filename="perch-audit-`+f.From.UTC().Format("20060102")+"-"+to.UTC().Format("20060102")+"."+ext+`"`)
	h.Set("Cache-Control", "no-store")
	// The export may take longer than a request body's read deadline allows.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	buf := bufio.NewWriterSize(w, 32<<10)
	write := json.NewEncoder(buf).Encode
	cw := csv.NewWriter(buf)
	if format == formatCSV {
		cw.Write(auditCSVHeader)
		write = func(v any) error { cw.Write(auditCSVRow(v.(*perch.AuditEntry))); return cw.Error() }
	}
	f.Cursor, f.Limit = "", 0 // the whole range
	err := s.adminDB.EachAudit(r.Context(), f, func(e *perch.AuditEntry) error { return write(e) })
	if err == nil {
		cw.Flush()
		if err = cw.Error(); err == nil {
			err = buf.Flush()
		}
	}
	if err == nil {
		return nil
	}
	s.log.Error("audit export failed part way", "request_id", requestID(r), "err", err)
	panic(http.ErrAbortHandler)
}

var auditCSVHeader = []string{"id", "at", "action", "actor_type", "actor_id", "actor_email", "target_type", "target_id",
	"org_id", "ip", "user_agent", "request_id", "changes"}

// auditCSVRow is e as a CSV row. Text a spreadsheet would read as a formula
// (=, +, -, @ first) is prefixed with a quote mark: addresses and user
// agents come from outside.
func auditCSVRow(e *perch.AuditEntry) []string {
	changes := ""
	if len(e.Changes) > 0 {
		b, _ := json.Marshal(e.Changes)
		changes = string(b)
	}
	row := []string{e.ID, e.At.Format(time.RFC3339Nano), e.Action, e.Actor.Type, e.Actor.ID, e.Actor.Email,
		e.Target.Type, e.Target.ID, e.OrgID, e.IP, e.UserAgent, e.RequestID, changes}
	for i, v := range row {
		if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
			row[i] = "'" + v
		}
	}
	return row
}
