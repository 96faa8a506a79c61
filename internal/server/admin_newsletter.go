package server

import (
	"context"
	"encoding/csv"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/mail"
)

// Where a newsletter's unsubscribe links lead: the one-click URL that mail
// clients POST to (List-Unsubscribe), and the dashboard's page the body
// links to, which asks before it unsubscribes.
const (
	unsubscribePath     = "/api/v1/newsletter/unsubscribe"
	unsubscribePagePath = "/newsletter/unsubscribe"
)

// unsubscribePurpose is what unsubscribe tokens are signed for: a signature
// made for anything else is no unsubscribe token.
const unsubscribePurpose = "newsletter-unsubscribe"

// unsubscribeToken is the newsletter's unsubscribe token for a user
// (secrets.Box.LinkToken): it grants nothing but unsubscribing, does not
// expire (last year's newsletter can still be left), and is the same in
// every issue; a new PERCH_SECRET_KEY voids them all.
func (s *Server) unsubscribeToken(userID string) string {
	return s.opts.Secrets.LinkToken(unsubscribePurpose, userID)
}

// unsubscriber returns the user an unsubscribe token names, when it is one
// this server signed.
func (s *Server) unsubscriber(token string) (userID string, ok bool) {
	if s.opts.Secrets == nil {
		return "", false
	}
	return s.opts.Secrets.LinkTokenID(unsubscribePurpose, token)
}

// newsletterPage is the admin's list: how many subscribers there are in
// all, and one page of them.
type newsletterPage struct {
	Subscribers int                 `json:"subscribers"`
	Items       []*perch.Subscriber `json:"items"`
}

// listNewsletter answers the subscribers, newest first, a page at a time;
// asked for text/csv, it streams them all.
func (s *Server) listNewsletter(w http.ResponseWriter, r *http.Request) error {
	if acceptsCSV(r) {
		return s.exportNewsletter(w, r)
	}
	page, err := pageOf(r)
	if err != nil {
		return err
	}
	subs, next, err := s.adminDB.NewsletterSubscribers(r.Context(), page)
	if err != nil {
		return err
	}
	n, err := s.adminDB.CountNewsletterSubscribers(r.Context(), time.Time{})
	if err != nil {
		return err
	}
	return respondPage(w, newsletterPage{Subscribers: n, Items: subs}, next)
}

// acceptsCSV reports whether the request asks for text/csv.
func acceptsCSV(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/csv" {
			return true
		}
	}
	return false
}

// exportNewsletter writes every subscriber as CSV, read from the store a
// chunk at a time: memory stays flat however many there are. A failure once
// rows are out cannot become an error answer; the connection is cut, so
// the client sees the export is incomplete rather than take it for whole.
func (s *Server) exportNewsletter(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="newsletter-subscribers.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	cw := csv.NewWriter(w)
	cw.Write([]string{"user_id", "email", "name", "subscribed_at"})
	err := s.adminDB.EachNewsletterSubscriber(r.Context(), time.Time{}, func(sub *perch.Subscriber) error {
		cw.Write([]string{sub.UserID, csvCell(sub.Email), csvCell(sub.Name), sub.SubscribedAt.UTC().Format(time.RFC3339)})
		return cw.Error()
	})
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	if err != nil {
		s.log.Error("newsletter export failed part-way", "request_id", requestID(r), "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// csvCell keeps a value people typed from being read as a formula by a
// spreadsheet: one that starts with = + - @ or a control is quoted with '.
func csvCell(v string) string {
	if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
		return "'" + v
	}
	return v
}

// sendNewsletter queues one message per subscriber and answers how many:
// those subscribed now. The messages go out one after another in the
// background; whoever unsubscribes before their turn is left out.
func (s *Server) sendNewsletter(w http.ResponseWriter, r *http.Request) error {
	var issue perch.NewsletterIssue
	if err := decode(r, &issue); err != nil {
		return err
	}
	if err := issue.Validate(); err != nil {
		return err
	}
	if s.opts.Secrets == nil {
		// The unsubscribe links are signed with it.
		return errNoSecretKey
	}
	through := s.now()
	n, err := s.adminDB.CountNewsletterSubscribers(r.Context(), through)
	if err != nil {
		return err
	}
	ctx := context.WithoutCancel(r.Context())
	s.mailing.Go(func() { s.deliverNewsletter(ctx, issue, through) })
	s.audit(r, perch.AuditEntry{Action: perch.AuditNewsletterSent, Target: perch.AuditTarget{Type: "newsletter"},
		Changes: map[string]any{"subject": issue.Subject, "recipients": n}})
	return respond(w, http.StatusAccepted, map[string]int{"queued": n})
}

// deliverNewsletter sends issue to everyone subscribed at through, one
// message at a time, and logs how it went. A failed message is logged and
// the others still go.
func (s *Server) deliverNewsletter(ctx context.Context, issue perch.NewsletterIssue, through time.Time) {
	if s.mailer == nil {
		s.log.Warn("no mailer configured; newsletter dropped", "subject", issue.Subject)
		return
	}
	sent, failed := 0, 0
	err := s.adminDB.EachNewsletterSubscriber(ctx, through, func(sub *perch.Subscriber) error {
		token := url.QueryEscape(s.unsubscribeToken(sub.UserID))
		m := mail.Newsletter(sub.Email, issue.Subject, issue.Body,
			s.opts.BaseURL+unsubscribePagePath+"?token="+token, s.opts.BaseURL+unsubscribePath+"?token="+token)
		sctx, cancel := context.WithTimeout(ctx, mailTimeout)
		defer cancel()
		if err := s.mailer.Send(sctx, m); err != nil {
			failed++
			s.log.Error("sending the newsletter failed", "to", sub.Email, "err", err)
			return nil
		}
		sent++
		return nil
	})
	if err != nil {
		s.log.Error("the newsletter stopped part-way: reading subscribers failed", "subject", issue.Subject, "sent", sent, "err", err)
	}
	s.log.Info("newsletter sent", "subject", issue.Subject, "sent", sent, "failed", failed)
}

// errBadUnsubscribe answers a token this server did not sign, or whose
// user is gone.
var errBadUnsubscribe = perch.Errorf(perch.ENOTFOUND,
	"This unsubscribe link is not valid. Sign in and turn the newsletter off on your profile page instead.")

// unsubscribe takes the user a newsletter's link names off the newsletter:
// RFC 8058's one-click POST (body List-Unsubscribe=One-Click, which is not
// required), with no credential but the link's token. It may be repeated.
func (s *Server) unsubscribe(w http.ResponseWriter, r *http.Request) error {
	token := r.URL.Query().Get("token")
	if token == "" {
		return perch.Errorf(perch.EBADREQUEST, "The unsubscribe link has no token.")
	}
	userID, ok := s.unsubscriber(token)
	if !ok {
		return errBadUnsubscribe
	}
	changed, err := s.adminDB.SetNewsletter(r.Context(), userID, false)
	if perch.ErrorCode(err) == perch.ENOTFOUND {
		return errBadUnsubscribe
	}
	if err != nil {
		return err
	}
	u, err := s.adminDB.User(r.Context(), userID)
	if err != nil {
		return err
	}
	if changed {
		s.audit(r, perch.AuditEntry{Action: perch.AuditNewsletterLeft,
			Actor:  perch.AuditActor{Type: perch.ActorUser, ID: u.ID, Email: u.Email},
			Target: perch.AuditTarget{Type: "user", ID: u.ID}, OrgID: u.OrgID,
			Changes: map[string]any{"newsletter": false}})
	}
	return respond(w, http.StatusOK, map[string]any{"unsubscribed": true, "email": u.Email})
}

// unsubscribePage sends a browser that opens the one-click URL (a mail
// client without RFC 8058 may) to the dashboard's page, which asks first:
// a GET never unsubscribes, since link scanners follow links.
func (s *Server) unsubscribePage(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Location", unsubscribePagePath+"?token="+url.QueryEscape(r.URL.Query().Get("token")))
	w.WriteHeader(http.StatusSeeOther)
	return nil
}
