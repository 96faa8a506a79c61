package server

import (
	"encoding/base64"
	"encoding/json"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/netguard"
)

// notificationOf is the notification an event makes for scope, before
// workflows and storage: the sender's fields as parsed, and for a rich
// event (tags, icon, Markdown, actions; see rich) those too.
func (s *Server) notificationOf(e *perch.Event, scope perch.Scope) (perch.Notification, error) {
	n := perch.Notification{Tab: e.Tab, Title: e.Title, Message: e.Message, Severity: e.Severity, Source: e.Source, URL: e.URL, Scope: scope,
		Priority: e.Priority}
	if len(e.Tags) == 0 && e.Icon == "" && !e.Markdown && len(e.Actions) == 0 {
		return n, nil // the usual delivery: nothing more to copy or check
	}
	n.Tags, n.Icon, n.Markdown = e.Tags, e.Icon, e.Markdown
	if len(e.Actions) > 0 {
		actions, err := s.sealActions(e.Actions)
		if err != nil {
			return n, err
		}
		n.Actions = actions
	}
	return n, nil
}

// sealActions readies an event's actions to be stored: each http action's
// request (its method, URL, headers and body, which may carry the sender's
// credentials and never reach a client) sealed with the server's key into
// Sealed, after its target was checked. A target the address guard would
// refuse whatever the name resolves to (a loopback, private, link-local
// or metadata address written as an IP, or localhost) is refused here, 400,
// unless private targets are allowed (PERCH_WORKFLOW_ALLOW_PRIVATE, as for
// workflow forwards); a name that resolves to one is refused when the
// action runs, by the same guard.
func (s *Server) sealActions(in []perch.NotificationAction) ([]perch.NotificationAction, error) {
	out := make([]perch.NotificationAction, len(in))
	var problems perch.Problems
	var sentences []string
	for i, a := range in {
		out[i] = a
		if a.Request == nil {
			continue
		}
		if what := s.actionTargetProblem(a.Request.URL); what != "" {
			if problems == nil {
				problems = perch.Problems{}
			}
			field := "actions[" + strconv.Itoa(i) + "].url"
			problems.Add(field, what)
			sentences = append(sentences, field+" "+what+".")
			continue
		}
		if s.opts.Secrets == nil {
			return nil, perch.Errorf(perch.EUNAVAILABLE, "This server has no secret key (PERCH_SECRET_KEY), so it cannot keep an http action's request; send view actions only, or set the key.")
		}
		plain, _ := json.Marshal(a.Request) // strings and a map of strings: it cannot fail
		out[i].Sealed = base64.StdEncoding.EncodeToString(s.opts.Secrets.Seal(plain))
		out[i].Request = nil
	}
	if problems != nil {
		return nil, &perch.Error{Code: perch.EBADREQUEST, Message: strings.Join(sentences, " "), Fields: problems}
	}
	return out, nil
}

// actionTargetProblem is why an http action may not be sent to raw (an
// absolute http(s) URL, as the parser checked), or "".
func (s *Server) actionTargetProblem(raw string) string {
	if s.worker.AllowsPrivate() {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "must be an http:// or https:// address"
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "must not be this server's own address (localhost)"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return "" // a name: the guard checks what it resolves to when the action runs
	}
	if err := (&netguard.Guard{}).Check(ip); err != nil {
		return "must not be a loopback, private, link-local or metadata address"
	}
	return ""
}
