package store

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// SetNewsletter subscribes the user to the newsletter (on) or unsubscribes
// them, and says whether that changed anything: subscribing again keeps the
// time of the first opt-in. It returns ENOTFOUND when there is no such user.
func (s *Store) SetNewsletter(ctx context.Context, userID string, on bool) (changed bool, err error) {
	now := ms(s.now())
	q := `UPDATE users SET newsletter_at = ?, updated_at = ? WHERE id = ? AND newsletter_at IS NULL`
	args := []any{now, now, userID}
	if !on {
		q = `UPDATE users SET newsletter_at = NULL, updated_at = ? WHERE id = ? AND newsletter_at IS NOT NULL`
		args = []any{now, userID}
	}
	res, err := s.w.ExecContext(ctx, s.q(q), args...)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return n == 1, err
	}
	var one int
	err = s.r.QueryRowContext(ctx, s.q(`SELECT 1 FROM users WHERE id = ?`), userID).Scan(&one)
	return false, notFound(err, "User")
}

// subscribers are the users who opted in, whose address is confirmed (the
// newsletter goes to no address its owner has not proved) and whose
// account is not disabled.
const subscribers = `FROM users WHERE newsletter_at IS NOT NULL AND email_verified = TRUE AND disabled_at IS NULL`

// subscriberCursor is a position in the subscribers, newest first: the
// opt-in time and id of the last one of a page, written "ms.id".
type subscriberCursor struct {
	at int64
	id string
}

func parseSubscriberCursor(c string) (subscriberCursor, error) {
	if c == "" {
		return subscriberCursor{}, nil
	}
	at, id, ok := strings.Cut(c, ".")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || n <= 0 || id == "" {
		return subscriberCursor{}, perch.Errorf(perch.EBADREQUEST, "The cursor is not one this server answered.")
	}
	return subscriberCursor{n, id}, nil
}

func (c subscriberCursor) String() string { return strconv.FormatInt(c.at, 10) + "." + c.id }

// subscriberPage reads up to limit subscribers who opted in at or before
// through (all when zero), after the cursor, newest first.
func (s *Store) subscriberPage(ctx context.Context, through time.Time, after subscriberCursor, limit int) ([]*perch.Subscriber, error) {
	q := `SELECT id, email, name, newsletter_at ` + subscribers
	var args []any
	if !through.IsZero() {
		q += ` AND newsletter_at <= ?`
		args = append(args, ms(through))
	}
	if after.at > 0 {
		q += ` AND (newsletter_at < ? OR newsletter_at = ? AND id < ?)`
		args = append(args, after.at, after.at, after.id)
	}
	q += ` ORDER BY newsletter_at DESC, id DESC LIMIT ?`
	rows, err := s.r.QueryContext(ctx, s.q(q), append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*perch.Subscriber{}
	for rows.Next() {
		var sub perch.Subscriber
		var at int64
		if err := rows.Scan(&sub.UserID, &sub.Email, &sub.Name, &at); err != nil {
			return nil, err
		}
		sub.SubscribedAt = fromMS(at)
		out = append(out, &sub)
	}
	return out, rows.Err()
}

func cursorOf(sub *perch.Subscriber) subscriberCursor {
	return subscriberCursor{ms(sub.SubscribedAt), sub.UserID}
}

// NewsletterSubscribers answers one page of the subscribers, newest first,
// and the cursor of the next page ("" after the last).
func (s *Store) NewsletterSubscribers(ctx context.Context, page perch.Page) ([]*perch.Subscriber, string, error) {
	after, err := parseSubscriberCursor(page.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := cmp.Or(page.Limit, perch.DefaultPageLimit)
	subs, err := s.subscriberPage(ctx, time.Time{}, after, limit+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(subs) > limit {
		subs = subs[:limit]
		next = cursorOf(subs[limit-1]).String()
	}
	return subs, next, nil
}

// CountNewsletterSubscribers says how many subscribers opted in at or
// before through (all of them when through is zero).
func (s *Store) CountNewsletterSubscribers(ctx context.Context, through time.Time) (int, error) {
	q, args := `SELECT COUNT(*) `+subscribers, []any{}
	if !through.IsZero() {
		q += ` AND newsletter_at <= ?`
		args = append(args, ms(through))
	}
	var n int
	err := s.r.QueryRowContext(ctx, s.q(q), args...).Scan(&n)
	return n, err
}

// subscriberChunk is how many subscribers EachNewsletterSubscriber reads at
// a time.
const subscriberChunk = 500

// EachNewsletterSubscriber calls fn with every subscriber who opted in at
// or before through (all when zero), newest first, reading a chunk at a
// time: memory stays flat however many there are, and no read is held open
// while fn works (it may send mail). Whoever unsubscribes before their chunk
// is read is left out. It stops at fn's first error.
func (s *Store) EachNewsletterSubscriber(ctx context.Context, through time.Time, fn func(*perch.Subscriber) error) error {
	var after subscriberCursor
	for {
		subs, err := s.subscriberPage(ctx, through, after, subscriberChunk)
		if err != nil {
			return err
		}
		for _, sub := range subs {
			if err := fn(sub); err != nil {
				return err
			}
		}
		if len(subs) < subscriberChunk {
			return nil
		}
		after = cursorOf(subs[len(subs)-1])
	}
}
