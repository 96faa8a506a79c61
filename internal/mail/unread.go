package mail

import (
	"fmt"
	"strings"
)

// UnreadKind is the kind of the mail of notifications a user has not read
// (their preferences' email_unread).
const UnreadKind = "unread"

// The unread mail's one-click unsubscribe (RFC 8058): mail clients POST to
// UnreadUnsubscribePath?token=, a secrets.Box.LinkToken of the user's id
// for UnreadUnsubscribePurpose, which turns the mail off.
const (
	UnreadUnsubscribePath    = "/api/v1/unread-mail/unsubscribe"
	UnreadUnsubscribePurpose = "unread-mail-unsubscribe"
)

// UnreadItem is one notification an unread mail lists.
type UnreadItem struct {
	Title    string
	Tab      string
	Priority string // its name: min, low, default, high, urgent
	Link     string // its URL, "" when it has none (or none safe to link)
}

// Unread lists the notifications a user has not read after wait ("30
// minutes"): items, newest first, and more besides that the mail does not
// list. link opens Perch, where they are; unsubscribe, when not "", is the
// one-click URL that turns this mail off (List-Unsubscribe).
func Unread(to, name string, items []UnreadItem, more int, wait, link, unsubscribe string) Message {
	n := len(items) + more
	subject := fmt.Sprintf("%d notifications you have not read", n)
	if n == 1 {
		subject = "1 notification you have not read"
	}
	for i := range items {
		items[i].Title = strings.Join(strings.Fields(items[i].Title), " ")
	}
	m := render(UnreadKind, data{To: to, Name: name, Subject: subject, Items: items, More: more, Validity: wait, Link: link})
	m.Unsubscribe = unsubscribe
	return m
}
