package worker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/mail"
	"github.com/perch-dev/perch/internal/store"
)

// The unread mail's pace and bounds (docs/DESIGN.md, Preferences).
const (
	unreadBatch = 50 // users' mail claimed per tick
	unreadItems = 20 // notifications one mail lists; it counts the rest
	// unreadRecheck is how soon a user whose mail found nothing, or
	// failed, is looked at again: a notification is mailed at most this
	// late after it has waited its minutes.
	unreadRecheck = time.Minute
)

// mailUnread mails each user whose unread mail is due what they have not
// read: one mail per window (their after_minutes) at most, each
// notification in one mail at most, none once read.
func (wk *Worker) mailUnread(ctx context.Context) error {
	now := wk.now()
	due, err := wk.store.DueUnreadMail(ctx, now, unreadBatch, unreadItems)
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("claiming due unread mail: %w", err))
	}
	for _, m := range due {
		errs = append(errs, wk.mailUnreadTo(ctx, m, now))
	}
	return errors.Join(errs...)
}

// mailUnreadTo sends m, when it holds anything, and records the outcome:
// sent, its notifications are covered and the next mail waits a window; a
// failed send is tried again shortly with the same ones; nothing to send
// looks again shortly.
func (wk *Worker) mailUnreadTo(ctx context.Context, m *store.UnreadMail, now time.Time) error {
	record := func(covered bool, next time.Time) error {
		if err := wk.store.UnreadMailed(context.WithoutCancel(ctx), m, covered, next); err != nil {
			return fmt.Errorf("recording the unread mail of user %s: %w", m.User.ID, err)
		}
		return nil
	}
	if len(m.Notifications) == 0 {
		return record(true, now.Add(unreadRecheck))
	}
	if wk.mailer == nil {
		return errors.Join(errors.New("no mailer is configured for the unread mail"), record(false, now.Add(unreadRecheck)))
	}
	items := make([]mail.UnreadItem, len(m.Notifications))
	for i, n := range m.Notifications {
		items[i] = mail.UnreadItem{Title: n.Title, Tab: n.Tab, Priority: perch.PriorityName(n.Priority)}
		if n.URL != "" && perch.ValidURL(n.URL) {
			items[i].Link = n.URL
		}
	}
	wait := fmt.Sprintf("%d minutes", m.Settings.AfterMinutes)
	if m.Settings.AfterMinutes == 1 {
		wait = "1 minute"
	}
	// One click turns it off, where the server can sign the link.
	var unsubscribe string
	if wk.opts.Secrets != nil && wk.opts.BaseURL != "" {
		unsubscribe = strings.TrimSuffix(wk.opts.BaseURL, "/") + mail.UnreadUnsubscribePath + "?token=" +
			url.QueryEscape(wk.opts.Secrets.LinkToken(mail.UnreadUnsubscribePurpose, m.User.ID))
	}
	sendCtx, cancel := context.WithTimeout(ctx, mailTimeout)
	err := wk.mailer.Send(sendCtx, mail.Unread(m.User.Email, m.User.Name, items, m.Found-len(items), wait, wk.opts.BaseURL, unsubscribe))
	cancel()
	if err != nil {
		return errors.Join(fmt.Errorf("mailing user %s what they have not read: %w", m.User.ID, err), record(false, now.Add(unreadRecheck)))
	}
	return record(true, now.Add(time.Duration(m.Settings.AfterMinutes)*time.Minute))
}
