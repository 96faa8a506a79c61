package senders

import (
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/perch-dev/perch"
)

// rich holds the inbound members beyond the plain notification's
// (docs/DESIGN.md, The rich notification). Each is any, so that a member of
// the wrong type is named rather than failing the whole decode; a delivery
// without them pays for nothing but their absence.
type rich struct {
	Priority, Tags, Icon, Markdown, Actions any
	DeliverAt                               any `json:"deliver_at"`
	Delay                                   any
}

// complaint collects what is wrong with a delivery: one sentence each for
// the message, and the field's problem for Fields.
type complaint struct {
	sentences []string
	fields    perch.Problems // made on the first problem: most deliveries have none
}

func (c *complaint) add(name, what string) {
	if c.fields == nil {
		c.fields = perch.Problems{}
	}
	c.sentences = append(c.sentences, name+" "+what+".")
	c.fields.Add(name, what)
}

// parse reads the rich members into e, adding what is wrong with them to c.
func (r *rich) parse(e *perch.Event, c *complaint) {
	if r.Priority != nil {
		p, what := perch.PriorityProblem(r.Priority)
		if what != "" {
			c.add("priority", what)
		}
		e.Priority = p
	}
	e.Tags = parseTags(r.Tags, c)
	switch v := r.Icon.(type) {
	case nil:
	case string:
		if v = strings.TrimSpace(v); v != "" {
			if !perch.ValidURL(v) || !strings.HasPrefix(strings.ToLower(v), "https://") {
				c.add("icon", "must be an https:// address")
			} else {
				e.Icon = v
			}
		}
	default:
		c.add("icon", "must be a string")
	}
	switch v := r.Markdown.(type) {
	case nil:
	case bool:
		e.Markdown = v
	default:
		c.add("markdown", "must be true or false")
	}
	e.Actions = parseActions(r.Actions, c)
	r.parseSchedule(e, c)
}

func parseTags(v any, c *complaint) []string {
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		c.add("tags", "must be an array of strings")
		return nil
	}
	if len(list) > perch.MaxTags {
		c.add("tags", fmt.Sprintf("must hold at most %d tags", perch.MaxTags))
		return nil
	}
	var tags []string
	for i, t := range list {
		name := "tags[" + strconv.Itoa(i) + "]"
		s, ok := t.(string)
		if !ok {
			c.add(name, "must be a string")
			continue
		}
		s = strings.TrimSpace(s)
		if what := perch.TagProblem(s); what != "" {
			c.add(name, what)
			continue
		}
		tags = append(tags, s)
	}
	return tags
}

// actionMethods are the methods an http action may use.
var actionMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// reservedHeaders are set by Perch on an http action's request, or by the
// transport, and may not come from the sender.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"X-Perch-Signature": true, "Te": true, "Trailer": true, "Upgrade": true,
}

func parseActions(v any, c *complaint) []perch.NotificationAction {
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		c.add("actions", "must be an array of objects")
		return nil
	}
	if len(list) > perch.MaxActions {
		c.add("actions", fmt.Sprintf("must hold at most %d actions", perch.MaxActions))
		return nil
	}
	var actions []perch.NotificationAction
	for i, item := range list {
		name := "actions[" + strconv.Itoa(i) + "]"
		if a, ok := parseAction(name, item, c); ok {
			a.ID = "a" + strconv.Itoa(i+1)
			actions = append(actions, a)
		}
	}
	return actions
}

// parseAction reads one action; false when something is wrong with it
// (told to c).
func parseAction(name string, v any, c *complaint) (perch.NotificationAction, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		c.add(name, "must be an object")
		return perch.NotificationAction{}, false
	}
	member := func(key string) any { // names in any case, as everywhere here
		for k, v := range obj {
			if strings.EqualFold(k, key) {
				return v
			}
		}
		return nil
	}
	text := func(key string) (string, bool) {
		switch v := member(key).(type) {
		case nil:
			return "", true
		case string:
			return v, true
		}
		c.add(name+"."+key, "must be a string")
		return "", false
	}
	bad := len(c.sentences)
	typ, _ := text("type")
	typ = strings.ToLower(strings.TrimSpace(typ))
	switch typ {
	case perch.ActionView, perch.ActionHTTP:
	case "":
		c.add(name+".type", "is required: view or http")
	default:
		c.add(name+".type", "must be view or http")
	}
	label, _ := text("label")
	label = perch.OneLine(strings.Map(foldSpace, label))
	switch {
	case label == "":
		c.add(name+".label", "is required")
	case utf8.RuneCountInString(label) > perch.MaxActionLabel:
		c.add(name+".label", fmt.Sprintf("must be at most %d characters", perch.MaxActionLabel))
	default:
		if what := perch.TextProblem(label, perch.SingleLine); what != "" {
			c.add(name+".label", what)
		}
	}
	link, _ := text("url")
	switch link = strings.TrimSpace(link); {
	case link == "":
		c.add(name+".url", "is required")
	case !perch.ValidURL(link):
		c.add(name+".url", "must be an http:// or https:// address")
	}
	a := perch.NotificationAction{Type: typ, Label: label}
	if typ == perch.ActionView {
		a.URL = link
		for _, key := range []string{"method", "headers", "body"} {
			if member(key) != nil {
				c.add(name+"."+key, "is for http actions only")
			}
		}
		return a, len(c.sentences) == bad
	}
	req := &perch.ActionRequest{URL: link, Method: http.MethodPost}
	if m, ok := text("method"); ok && m != "" {
		req.Method = strings.ToUpper(strings.TrimSpace(m))
		if !slices.Contains(actionMethods, req.Method) {
			c.add(name+".method", "must be GET, POST, PUT, PATCH or DELETE")
		}
	}
	if body, ok := text("body"); ok {
		if len(body) > perch.MaxActionBody {
			c.add(name+".body", fmt.Sprintf("must be at most %d bytes", perch.MaxActionBody))
		} else if !utf8.ValidString(body) {
			c.add(name+".body", "must be UTF-8 text")
		}
		req.Body = body
	}
	req.Headers = parseHeaders(name+".headers", member("headers"), c)
	a.Request = req
	return a, len(c.sentences) == bad
}

func parseHeaders(name string, v any, c *complaint) map[string]string {
	if v == nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		c.add(name, "must be an object of header names and values")
		return nil
	}
	if len(obj) > perch.MaxActionHeaders {
		c.add(name, fmt.Sprintf("must hold at most %d headers", perch.MaxActionHeaders))
		return nil
	}
	headers := make(map[string]string, len(obj))
	for k, v := range obj {
		s, ok := v.(string)
		key := textproto.CanonicalMIMEHeaderKey(k)
		switch {
		case !validHeaderName(k):
			c.add(name, fmt.Sprintf("has %q, which is not a header name", k))
		case reservedHeaders[key]:
			c.add(name, fmt.Sprintf("may not set %s: Perch sets it", key))
		case !ok:
			c.add(name+"."+k, "must be a string")
		case len(s) > 1024 || strings.ContainsAny(s, "\r\n\x00"):
			c.add(name+"."+k, "must be one line of at most 1024 bytes")
		default:
			headers[key] = s
		}
	}
	return headers
}

// validHeaderName reports whether s is an HTTP token (RFC 9110 §5.6.2).
func validHeaderName(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for i := range len(s) {
		ch := s[i]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", ch) >= 0 {
			continue
		}
		return false
	}
	return true
}

// parseSchedule reads deliver_at or delay. Their bound against the clock
// (not in the past, at most perch.MaxDeliveryDelay ahead) is the
// receiver's to check: a parser has no clock. A delay must be positive and
// within the bound on its own.
func (r *rich) parseSchedule(e *perch.Event, c *complaint) {
	if r.DeliverAt != nil && r.Delay != nil {
		c.add("deliver_at", "cannot be given with delay: give one")
		return
	}
	switch v := r.DeliverAt.(type) {
	case nil:
	case string:
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(v))
		if err != nil {
			c.add("deliver_at", "must be a time in RFC 3339, such as 2026-12-24T09:00:00Z")
			return
		}
		e.DeliverAt = t
	default:
		c.add("deliver_at", "must be a string")
	}
	switch v := r.Delay.(type) {
	case nil:
	case string:
		d, err := time.ParseDuration(strings.TrimSpace(v))
		switch {
		case err != nil:
			c.add("delay", "must be a duration such as 30m or 2h45m")
		case d <= 0:
			c.add("delay", "must be positive")
		case d > perch.MaxDeliveryDelay:
			c.add("delay", "must be at most 7 days (168h)")
		default:
			e.Delay = d
		}
	default:
		c.add("delay", "must be a string")
	}
}
