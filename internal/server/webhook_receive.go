package server

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/senders"
	"github.com/perch-dev/perch/internal/store"
)

// webhookStore is what the webhook receiver needs from storage: the token a
// delivery names (through the token cache).
type webhookStore interface {
	WebhookTokenByHash(ctx context.Context, hash string) (*perch.WebhookToken, error)
}

var _ webhookStore = (*store.Store)(nil)

// parser turns one delivery into events; see internal/senders.
type parser func(h http.Header, body []byte) (senders.Result, error)

// receiver serves one sender's webhook: it authenticates the token (or, with
// none, broadcasts when that is allowed) before reading the body, checks the
// sender's signature, parses, stores durably, and only then answers 200.
func (s *Server) receiver(sender string, parse parser) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		scope, tok, err := s.webhookAudience(w, r, sender)
		if err != nil {
			return err
		}
		body, err := readBody(r)
		if err != nil {
			return err
		}
		if err := s.verifySignature(sender, r.Header, body); err != nil {
			return err
		}
		res, err := parse(r.Header, body)
		if err != nil {
			return err
		}
		if res.Ignored != "" {
			writeJSON(w, http.StatusOK, receipt{Received: true, Ignored: res.Ignored})
			return nil
		}
		if err := s.allowNotifications(w, r, scope, len(res.Events)); err != nil {
			return err
		}
		batch := make([]store.NewNotification, len(res.Events))
		idem := r.Header.Get("Idempotency-Key")
		for i, e := range res.Events {
			key := e.DeliveryID
			if idem != "" {
				key = idem
				if len(res.Events) > 1 {
					key += ":" + strconv.Itoa(i)
				}
			}
			if key != "" {
				key = tok.id + "|" + e.Source + "|" + key
			}
			n, err := s.notificationOf(&res.Events[i], scope)
			if err != nil {
				return err
			}
			batch[i] = store.NewNotification{DedupeKey: key, Notification: n}
		}
		var flowed *flowed
		if tok.orgID != "" {
			payload := body
			if res.Payload != nil {
				payload = res.Payload
			}
			if flowed = s.applyWorkflows(r.Context(), tok.orgID, payload, batch); flowed != nil {
				batch = flowed.keep
				flowed.keepPayload(payload)
			}
		}
		var stored []store.Stored
		if len(batch) > 0 {
			if stored, err = s.ingest.Write(r.Context(), batch...); err != nil {
				return err
			}
		}
		out := receipt{Received: true, IDs: make([]string, len(stored)), Duplicate: len(stored) > 0}
		for i, st := range stored {
			out.IDs[i] = st.Notification.ID
			out.Duplicate = out.Duplicate && st.Duplicate
		}
		if flowed != nil {
			flowed.stored(s.runs, stored)
			out.Withheld = flowed.held
			if flowed.jobs {
				s.worker.Wake()
			}
		}
		writeReceipt(w, out)
		return nil
	})
}

// receipt is a receiver's answer: the ids of the notifications stored, and
// whether all of them were stored before (a redelivery); or why a delivery
// that was understood is dropped. Withheld counts the notifications that
// the organisation's workflows dropped, throttled or held for a digest:
// accepted, and not stored as they came.
type receipt struct {
	Received  bool     `json:"received"`
	IDs       []string `json:"ids,omitempty"`
	Duplicate bool     `json:"duplicate,omitempty"`
	Withheld  int      `json:"withheld,omitempty"`
	Ignored   string   `json:"ignored,omitempty"`
}

// writeReceipt answers 200 with rc. Every accepted delivery is answered
// so, and the usual receipt (ids, perhaps duplicate or withheld, nothing
// ignored) is appended byte by byte rather than through encoding/json's
// reflection (3.5 µs of a delivery's server time in a profile at 128
// senders); anything else takes writeJSON. The bytes are the same either
// way (TestReceiptEncoding).
func writeReceipt(w http.ResponseWriter, rc receipt) {
	b, ok := rc.appendPlain(make([]byte, 0, 48+24*len(rc.IDs)))
	if !ok {
		writeJSON(w, http.StatusOK, rc)
		return
	}
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// appendPlain appends rc as encoding/json's Encoder writes it, when that
// needs no escaping: false for a receipt that ignores, or an id with any
// byte but a letter, digit, '-' or '_' (the store's ids have none).
func (rc receipt) appendPlain(b []byte) ([]byte, bool) {
	if rc.Ignored != "" || !rc.Received {
		return nil, false
	}
	b = append(b, `{"received":true`...)
	if len(rc.IDs) > 0 {
		b = append(b, `,"ids":[`...)
		for i, id := range rc.IDs {
			if !plainID(id) {
				return nil, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, id...)
			b = append(b, '"')
		}
		b = append(b, ']')
	}
	if rc.Duplicate {
		b = append(b, `,"duplicate":true`...)
	}
	if rc.Withheld != 0 {
		b = append(b, `,"withheld":`...)
		b = strconv.AppendInt(b, int64(rc.Withheld), 10)
	}
	return append(b, "}\n"...), true
}

func plainID(id string) bool {
	for i := range len(id) {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// sender is who a delivery came from: the webhook token's id (or, for an
// anonymous broadcast, the client address) and its organisation ("" for a
// broadcast, which no organisation's workflows see).
type sender struct{ id, orgID string }

// allowNotifications bounds what one delivery may make: at most
// MaxDeliveryNotifications notifications, whatever the sender and scope, and
// an anonymous broadcast counts every notification against its address's
// limit (webhookAudience counted the first), since each reaches every user.
func (s *Server) allowNotifications(w http.ResponseWriter, r *http.Request, scope perch.Scope, n int) error {
	if max := s.opts.Webhooks.MaxDeliveryNotifications; n > max {
		return perch.Errorf(perch.ETOOLARGE, "This delivery would make %d notifications; one delivery may make at most %d. Send them in smaller batches.", n, max)
	}
	if scope.Type == perch.ScopeAll && n > 1 {
		return s.allowRate(w, r, s.opts.Webhooks.BroadcastLimit, broadcastKey(s.clientIP(r)), n-1)
	}
	return nil
}

func broadcastKey(ip netip.Addr) string { return "broadcast-ip:" + ip.String() }

// webhookAudience decides who a delivery is for, from its token. Without a
// token the delivery is a broadcast to everyone, when the server allows that,
// and limited per client IP (here, by one notification; allowNotifications
// counts the rest once the delivery is parsed).
func (s *Server) webhookAudience(w http.ResponseWriter, r *http.Request, name string) (perch.Scope, sender, error) {
	raw := queryValue(r.URL, "token")
	if raw == "" {
		if !s.opts.Webhooks.AnonymousBroadcast {
			return perch.Scope{}, sender{}, perch.Errorf(perch.EUNAUTHORIZED, "A webhook token is required: add ?token=whk_… to the URL.")
		}
		if err := s.allowRate(w, r, s.opts.Webhooks.BroadcastLimit, broadcastKey(s.clientIP(r)), 1); err != nil {
			return perch.Scope{}, sender{}, err
		}
		// Anonymous redeliveries are recognised per client address, so one
		// sender's keys cannot suppress another's broadcasts.
		return perch.Scope{Type: perch.ScopeAll}, sender{id: "anonymous:" + s.clientIP(r).String()}, nil
	}
	if !strings.HasPrefix(raw, perch.WebhookTokenPrefix) {
		return perch.Scope{}, sender{}, perch.Errorf(perch.EUNAUTHORIZED, "The token is not a webhook token (whk_…).")
	}
	t, touch, err := s.tokens.lookup(r.Context(), s.webhookDB, auth.HashToken(raw), s.now())
	if err != nil {
		return perch.Scope{}, sender{}, err
	}
	if t.Sender != name {
		return perch.Scope{}, sender{}, perch.Errorf(perch.EFORBIDDEN, "This token is for the %s receiver (/webhooks/%s), not %s.", t.Sender, t.Sender, name)
	}
	if touch {
		s.touches.add(t.ID, s.now())
	}
	return t.Audience(), sender{id: t.ID, orgID: t.OrgID}, nil
}

var errBadSignature = perch.Errorf(perch.EUNAUTHORIZED, "The delivery's signature is missing or wrong.")

// verifySignature checks the sender's HMAC when a secret is configured.
func (s *Server) verifySignature(sender string, h http.Header, body []byte) error {
	switch {
	case sender == perch.SenderCodeHost && s.opts.Webhooks.GitHubSecret != "":
		if !senders.VerifyGitHubSignature([]byte(s.opts.Webhooks.GitHubSecret), h.Get("X-Hub-Signature-256"), body) {
			return errBadSignature
		}
	case sender == perch.SenderIncidents && s.opts.Webhooks.PagerDutySecret != "":
		if !senders.VerifyPagerDutySignature([]byte(s.opts.Webhooks.PagerDutySecret), h.Get("X-PagerDuty-Signature"), body) {
			return errBadSignature
		}
	}
	return nil
}

func parseInbound(_ http.Header, body []byte) (senders.Result, error) { return senders.Inbound(body) }

// readBody reads a delivery whole: into a buffer of the declared length when
// that is small, as it mostly is; otherwise as the bytes arrive, so that a
// sender claiming a large body holds no more memory than it has sent.
func readBody(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n <= 64<<10 {
		body := make([]byte, n)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return nil, cmp.Or(bodyError(err), err)
		}
		return body, nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, cmp.Or(bodyError(err), err)
	}
	return body, nil
}

// queryValue is u.Query().Get(key) without building the whole map, for the
// plain queries senders use; anything escaped goes the long way.
func queryValue(u *url.URL, key string) string {
	q := u.RawQuery
	if strings.ContainsAny(q, "%+;") {
		return u.Query().Get(key)
	}
	for q != "" {
		var pair string
		pair, q, _ = strings.Cut(q, "&")
		if k, v, _ := strings.Cut(pair, "="); k == key {
			return v
		}
	}
	return ""
}
