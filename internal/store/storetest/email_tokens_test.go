package storetest_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// emailToken records a link token of kind for u, sent to email, that lives
// for ttl from the store's now.
func emailToken(tb testing.TB, s *store.Store, u *perch.User, kind, email, hash string, ttl time.Duration) {
	tb.Helper()
	if err := s.CreateEmailToken(context.Background(), u.ID, kind, email, hash, s.Now().Add(ttl)); err != nil {
		tb.Fatalf("CreateEmailToken(%s): %v", kind, err)
	}
}

func TestVerifyEmailWorksOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "Ada@Example.com")
		emailToken(t, s, ada, perch.EmailVerify, "Ada@Example.com", "verify-1", perch.VerifyEmailTTL)

		u, err := s.VerifyEmail(ctx, "verify-1")
		if err != nil || u.ID != ada.ID || !u.EmailVerified || u.Email != "Ada@Example.com" {
			t.Fatalf("VerifyEmail = %+v, %v", u, err)
		}
		if got, _ := s.User(ctx, ada.ID); !got.EmailVerified {
			t.Fatal("the address is not marked verified")
		}
		_, err = s.VerifyEmail(ctx, "verify-1")
		wantCode(t, err, perch.EBADREQUEST)
		_, err = s.VerifyEmail(ctx, "verify-unknown")
		wantCode(t, err, perch.EBADREQUEST)
	})
}

func TestVerifyEmailTokenExpires(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		emailToken(t, s, ada, perch.EmailVerify, "ada@example.com", "verify-early", perch.VerifyEmailTTL)
		emailToken(t, s, ada, perch.EmailVerify, "ada@example.com", "verify-late", perch.VerifyEmailTTL)
		bob := mustCreateUser(t, s, "Bob Babbage", "bob@example.com")
		emailToken(t, s, bob, perch.EmailVerify, "bob@example.com", "verify-bob", perch.VerifyEmailTTL)

		clock.Advance(perch.VerifyEmailTTL - time.Millisecond)
		if _, err := s.VerifyEmail(ctx, "verify-early"); err != nil {
			t.Fatalf("a token just before it expires: %v", err)
		}
		clock.Advance(time.Millisecond)
		_, err := s.VerifyEmail(ctx, "verify-late")
		wantCode(t, err, perch.EBADREQUEST)
		_, err = s.VerifyEmail(ctx, "verify-bob")
		wantCode(t, err, perch.EBADREQUEST)
		if got, _ := s.User(ctx, bob.ID); got.EmailVerified {
			t.Fatal("an expired token verified the address")
		}
	})
}

func TestVerifyTokenForAnOldAddressIsRefused(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob Babbage", "bob@example.com")
		emailToken(t, s, ada, perch.EmailVerify, "ada@example.com", "verify-old", perch.VerifyEmailTTL)
		emailToken(t, s, ada, perch.EmailChange, "countess@example.com", "change-1", perch.VerifyEmailTTL)
		if _, err := s.VerifyEmail(ctx, "change-1"); err != nil {
			t.Fatal(err)
		}
		_, err := s.VerifyEmail(ctx, "verify-old")
		wantCode(t, err, perch.EBADREQUEST)

		// Nor does a token for somebody else's address verify it.
		emailToken(t, s, ada, perch.EmailVerify, "bob@example.com", "verify-bobs", perch.VerifyEmailTTL)
		_, err = s.VerifyEmail(ctx, "verify-bobs")
		wantCode(t, err, perch.EBADREQUEST)
		if got, _ := s.User(ctx, bob.ID); got.EmailVerified {
			t.Fatal("Ada's token verified Bob's address")
		}
	})
}

func TestEmailChangeTokenChangesTheAddress(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		emailToken(t, s, ada, perch.EmailChange, "Countess@Example.com", "change-1", perch.VerifyEmailTTL)

		u, err := s.VerifyEmail(ctx, "change-1")
		if err != nil || u.ID != ada.ID || u.Email != "Countess@Example.com" || !u.EmailVerified {
			t.Fatalf("VerifyEmail(change) = %+v, %v", u, err)
		}
		got, hash, err := s.UserCredentials(ctx, "countess@example.com")
		if err != nil || got.ID != ada.ID || got.Email != "Countess@Example.com" || hash != "hash-of-ada@example.com" {
			t.Fatalf("UserCredentials(new address) = %+v, %q, %v", got, hash, err)
		}
		_, _, err = s.UserCredentials(ctx, "ada@example.com")
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.VerifyEmail(ctx, "change-1")
		wantCode(t, err, perch.EBADREQUEST)
		// The old address is free for somebody else.
		mustCreateUser(t, s, "Another Ada", "ada@example.com")
	})
}

func TestEmailChangeToAnAddressTakenMeanwhile(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		emailToken(t, s, ada, perch.EmailChange, "bob@example.com", "change-1", perch.VerifyEmailTTL)
		bob := mustCreateUser(t, s, "Bob Babbage", "BOB@example.com")

		_, err := s.VerifyEmail(ctx, "change-1")
		wantCode(t, err, perch.ECONFLICT)
		if got, _ := s.User(ctx, ada.ID); got.Email != "ada@example.com" || got.EmailVerified {
			t.Fatalf("Ada after the refused change = %+v", got)
		}
		if got, _, err := s.UserCredentials(ctx, "bob@example.com"); err != nil || got.ID != bob.ID {
			t.Fatalf("UserCredentials(Bob) = %+v, %v", got, err)
		}
	})
}

func TestEmailTokensOnlyWorkForTheirKind(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		emailToken(t, s, ada, perch.EmailPasswordReset, "ada@example.com", "reset-1", perch.PasswordResetTTL)
		emailToken(t, s, ada, perch.EmailVerify, "ada@example.com", "verify-1", perch.VerifyEmailTTL)
		emailToken(t, s, ada, perch.EmailChange, "countess@example.com", "change-1", perch.VerifyEmailTTL)

		_, err := s.VerifyEmail(ctx, "reset-1")
		wantCode(t, err, perch.EBADREQUEST)
		for _, hash := range []string{"verify-1", "change-1"} {
			_, _, err := s.ResetPassword(ctx, hash, "stolen-hash")
			wantCode(t, err, perch.EBADREQUEST)
		}
		if h, _ := s.PasswordHash(ctx, ada.ID); h != "hash-of-ada@example.com" {
			t.Fatalf("password hash = %q", h)
		}
		if got, _ := s.User(ctx, ada.ID); got.EmailVerified || got.Email != "ada@example.com" {
			t.Fatalf("user = %+v", got)
		}

		// A refusal does not spend the token: each still does its own job.
		if _, err := s.VerifyEmail(ctx, "verify-1"); err != nil {
			t.Fatalf("VerifyEmail(verify-1) after the refusal: %v", err)
		}
		if _, _, err := s.ResetPassword(ctx, "reset-1", "new-hash"); err != nil {
			t.Fatalf("ResetPassword(reset-1) after the refusal: %v", err)
		}
	})
}

func TestResetPasswordSetsTheHashAndSignsOutEverywhere(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob Babbage", "bob@example.com")
		laptop := session(t, s, ada, "laptop")
		phone := session(t, s, ada, "phone")
		session(t, s, bob, "bob")
		emailToken(t, s, ada, perch.EmailPasswordReset, "ada@example.com", "reset-1", perch.PasswordResetTTL)
		emailToken(t, s, ada, perch.EmailPasswordReset, "ada@example.com", "reset-2", perch.PasswordResetTTL)

		u, revoked, err := s.ResetPassword(ctx, "reset-1", "new-hash")
		slices.Sort(revoked)
		want := []string{laptop, phone}
		slices.Sort(want)
		if err != nil || u.ID != ada.ID || !slices.Equal(revoked, want) {
			t.Fatalf("ResetPassword = %+v, %q, %v; want Ada with %q revoked", u, revoked, err, want)
		}
		if h, _ := s.PasswordHash(ctx, ada.ID); h != "new-hash" {
			t.Fatalf("hash = %q", h)
		}
		for _, tag := range []string{"laptop", "phone"} {
			_, err := s.AccessPrincipal(ctx, "access-"+tag)
			wantCode(t, err, perch.EUNAUTHORIZED)
			_, _, err = s.RotateRefresh(ctx, "refresh-"+tag, tokens(s, tag+"-2"))
			wantCode(t, err, perch.EUNAUTHORIZED)
		}
		if _, err := s.AccessPrincipal(ctx, "access-bob"); err != nil {
			t.Fatalf("Bob was signed out: %v", err)
		}

		_, _, err = s.ResetPassword(ctx, "reset-1", "again-hash")
		wantCode(t, err, perch.EBADREQUEST)
		clock.Advance(perch.PasswordResetTTL)
		_, _, err = s.ResetPassword(ctx, "reset-2", "late-hash")
		wantCode(t, err, perch.EBADREQUEST)
		if h, _ := s.PasswordHash(ctx, ada.ID); h != "new-hash" {
			t.Fatalf("hash = %q after refused resets", h)
		}
	})
}

func TestOutboxNewestFirst(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		if list, err := s.Outbox(ctx, 10); err != nil || list == nil || len(list) != 0 {
			t.Fatalf("empty Outbox = %v, %v; want an empty list", list, err)
		}
		// The store keeps what it is given: the envelope, and the link and
		// bodies sealed (opaque bytes here) or withheld.
		msgs := []perch.KeptMail{
			{To: "ada@example.com", Subject: "Verify your address", Kind: perch.EmailVerify, Sealed: []byte("sealed one")},
			{To: "bob@example.com", Subject: "Join Ada's organisation", Kind: perch.EmailInvitation, Withheld: true},
			{To: "ada@example.com", Subject: "Reset your password", Kind: perch.EmailPasswordReset, Sealed: []byte{0, 1, 2, 255}},
		}
		for _, m := range msgs {
			if err := s.SaveMail(ctx, m); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Second)
		}
		list, err := s.Outbox(ctx, 10)
		if want := []perch.KeptMail{msgs[2], msgs[1], msgs[0]}; err != nil || !reflect.DeepEqual(list, want) {
			t.Fatalf("Outbox = %+v, %v; want %+v", list, err, want)
		}
		list, err = s.Outbox(ctx, 2)
		if want := []perch.KeptMail{msgs[2], msgs[1]}; err != nil || !reflect.DeepEqual(list, want) {
			t.Fatalf("Outbox(limit 2) = %+v, %v; want %+v", list, err, want)
		}
	})
}

func TestResetLinkForAnOldAddressIsRefused(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u := mustCreateUser(t, s, "Ada", "ada@example.com")
		if err := s.CreateEmailToken(ctx, u.ID, perch.EmailPasswordReset, "ada@example.com", "reset", s.Now().Add(perch.PasswordResetTTL)); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateEmailToken(ctx, u.ID, perch.EmailChange, "countess@example.com", "change", s.Now().Add(perch.VerifyEmailTTL)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.VerifyEmail(ctx, "change"); err != nil {
			t.Fatal(err)
		}
		_, _, err := s.ResetPassword(ctx, "reset", "new-hash")
		wantCode(t, err, perch.EBADREQUEST)
		if h, _ := s.PasswordHash(ctx, u.ID); h != "hash-of-ada@example.com" {
			t.Fatalf("the password changed through a link to the old address: %q", h)
		}
	})
}
