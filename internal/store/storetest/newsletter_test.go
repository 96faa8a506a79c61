package storetest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// verifiedUser creates a user whose address is confirmed.
func verifiedUser(tb testing.TB, s *store.Store, name string) *perch.User {
	tb.Helper()
	email := fmt.Sprintf("%s@example.com", name)
	u := mustCreateUser(tb, s, name, email)
	emailToken(tb, s, u, perch.EmailVerify, email, "verify-"+name, perch.VerifyEmailTTL)
	u, err := s.VerifyEmail(context.Background(), "verify-"+name)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

func subscribe(tb testing.TB, s *store.Store, u *perch.User, on bool) bool {
	tb.Helper()
	changed, err := s.SetNewsletter(context.Background(), u.ID, on)
	if err != nil {
		tb.Fatalf("SetNewsletter(%s, %v): %v", u.Name, on, err)
	}
	return changed
}

func TestNewsletterOptInAndOut(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := verifiedUser(t, s, "ada")
		if ada.Newsletter {
			t.Fatal("a new user takes the newsletter")
		}
		if !subscribe(t, s, ada, true) {
			t.Fatal("opting in changed nothing")
		}
		first := clock.Now()
		clock.Advance(time.Minute)
		if subscribe(t, s, ada, true) {
			t.Error("opting in twice changed something")
		}
		u, err := s.User(ctx, ada.ID)
		if err != nil || !u.Newsletter {
			t.Fatalf("User after opting in: newsletter %v, %v", u != nil && u.Newsletter, err)
		}
		subs, _, err := s.NewsletterSubscribers(ctx, perch.Page{Limit: 10})
		if err != nil || len(subs) != 1 || subs[0].UserID != ada.ID || subs[0].Email != "ada@example.com" || subs[0].Name != "ada" {
			t.Fatalf("subscribers = %+v, %v", subs, err)
		}
		if !subs[0].SubscribedAt.Equal(first) {
			t.Errorf("subscribed at %v, want the first opt-in, %v", subs[0].SubscribedAt, first)
		}
		if !subscribe(t, s, ada, false) {
			t.Error("opting out changed nothing")
		}
		if subscribe(t, s, ada, false) {
			t.Error("opting out twice changed something")
		}
		if u, _ := s.User(ctx, ada.ID); u.Newsletter {
			t.Error("the user still takes the newsletter")
		}
		if n, err := s.CountNewsletterSubscribers(ctx, time.Time{}); err != nil || n != 0 {
			t.Errorf("count after opting out = %d, %v", n, err)
		}
		_, err = s.SetNewsletter(ctx, "nosuchuser0000000000", true)
		wantCode(t, err, perch.ENOTFOUND)
	})
}

func TestNewsletterSubscribersAreConfirmedAndPaged(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		type position struct {
			at time.Time
			id string
		}
		var subscribed []position
		for i := range 7 {
			u := verifiedUser(t, s, fmt.Sprintf("user%d", i))
			subscribe(t, s, u, true)
			subscribed = append(subscribed, position{clock.Now(), u.ID})
			if i%3 != 0 { // some share an instant: the id breaks the tie
				clock.Advance(time.Second)
			}
		}
		// Newest first, and of those that share an instant the greatest id.
		slices.SortFunc(subscribed, func(a, b position) int {
			if c := b.at.Compare(a.at); c != 0 {
				return c
			}
			return strings.Compare(b.id, a.id)
		})
		var want []string
		for _, p := range subscribed {
			want = append(want, p.id)
		}
		unconfirmed := mustCreateUser(t, s, "Eve", "eve@example.com")
		subscribe(t, s, unconfirmed, true)
		verifiedUser(t, s, "bystander")
		disabled := verifiedUser(t, s, "disabled")
		subscribe(t, s, disabled, true)
		yes := true
		if _, err := s.UpdateUserAsAdmin(ctx, disabled.ID, perch.AdminUserUpdate{Disabled: &yes}, nil); err != nil {
			t.Fatal(err)
		}

		var got []string
		cursor := ""
		for range 10 {
			subs, next, err := s.NewsletterSubscribers(ctx, perch.Page{Cursor: cursor, Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			for _, sub := range subs {
				got = append(got, sub.UserID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("paged subscribers = %v, want %v", got, want)
		}
		if n, err := s.CountNewsletterSubscribers(ctx, time.Time{}); err != nil || n != 7 {
			t.Errorf("count = %d, %v; want 7", n, err)
		}

		var each []string
		err := s.EachNewsletterSubscriber(ctx, time.Time{}, func(sub *perch.Subscriber) error {
			each = append(each, sub.UserID)
			return nil
		})
		if err != nil || !slices.Equal(each, want) {
			t.Fatalf("EachNewsletterSubscriber = %v, %v; want %v", each, err, want)
		}

		// Those who opt in after a send began are not part of it.
		through := clock.Now()
		clock.Advance(time.Second)
		subscribe(t, s, verifiedUser(t, s, "late"), true)
		if n, _ := s.CountNewsletterSubscribers(ctx, through); n != 7 {
			t.Errorf("count through the send's start = %d, want 7", n)
		}
		each = nil
		s.EachNewsletterSubscriber(ctx, through, func(sub *perch.Subscriber) error { each = append(each, sub.UserID); return nil })
		if !slices.Equal(each, want) {
			t.Errorf("subscribers through the send's start = %v, want %v", each, want)
		}

		for _, bad := range []string{"x", "12", ".abc", "-5.abc", "abc.def"} {
			_, _, err := s.NewsletterSubscribers(ctx, perch.Page{Cursor: bad, Limit: 3})
			wantCode(t, err, perch.EBADREQUEST)
		}
	})
}

func TestEmailSettingsStored(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		_, err := s.EmailSettings(ctx)
		wantCode(t, err, perch.ENOTFOUND)

		in := store.EmailSettings{Host: "smtp.example.com", Port: 587, Username: "perch", SealedPassword: []byte{1, 2, 0, 255},
			From: "Perch <perch@example.com>", TLS: perch.MailTLSStartTLS}
		got, err := s.PutEmailSettings(ctx, in, false)
		if err != nil {
			t.Fatal(err)
		}
		if got.Host != in.Host || got.Port != 587 || got.Username != "perch" || !slices.Equal(got.SealedPassword, in.SealedPassword) ||
			got.From != in.From || got.TLS != perch.MailTLSStartTLS {
			t.Fatalf("stored %+v, want %+v", got, in)
		}

		// Without the password: the stored one stays.
		in2 := store.EmailSettings{Host: "relay.example.com", Port: 465, From: "perch@example.com", TLS: perch.MailTLSImplicit, SealedPassword: []byte{9}}
		got, err = s.PutEmailSettings(ctx, in2, true)
		if err != nil {
			t.Fatal(err)
		}
		if got.Host != "relay.example.com" || got.Port != 465 || got.Username != "" || !slices.Equal(got.SealedPassword, in.SealedPassword) {
			t.Fatalf("after keeping the password: %+v", got)
		}

		// A new one, or none.
		in2.SealedPassword = nil
		if got, err = s.PutEmailSettings(ctx, in2, false); err != nil || got.SealedPassword != nil {
			t.Fatalf("after removing the password: %+v, %v", got, err)
		}
	})
}
