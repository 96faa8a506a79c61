package storetest_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// challenge is the S256 challenge of RFC 7636's example verifier.
const challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"

// userCodeHash is the hash of the user code BCDFGHJK.
var userCodeHash = perch.HashUserCode("BCDFGHJK")

func mustStartDevice(tb testing.TB, s *store.Store, port int) *perch.DeviceSession {
	tb.Helper()
	d, err := s.CreateDeviceSession(context.Background(), perch.DeviceRequest{Port: port, CodeChallenge: challenge,
		ClientName: "perch CLI", ClientIP: "192.0.2.1", UserCodeHash: userCodeHash})
	if err != nil {
		tb.Fatalf("CreateDeviceSession: %v", err)
	}
	return d
}

func mustDevice(tb testing.TB, s *store.Store, id string) *perch.DeviceSession {
	tb.Helper()
	d, err := s.DeviceSession(context.Background(), id)
	if err != nil {
		tb.Fatalf("DeviceSession(%s): %v", id, err)
	}
	return d
}

func TestDeviceSessionApproveThenExchangeOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")

		start := clock.Now()
		// What the approval page shows comes back as it went in, Unicode
		// and an IPv6 address included.
		d, err := s.CreateDeviceSession(ctx, perch.DeviceRequest{Port: 49152, CodeChallenge: challenge,
			ClientName: "Perch für Ada’s Mac", ClientIP: "2001:db8::7", UserCodeHash: userCodeHash})
		if err != nil {
			t.Fatal(err)
		}
		want := &perch.DeviceSession{ID: d.ID, Port: 49152, CodeChallenge: challenge, ClientName: "Perch für Ada’s Mac",
			ClientIP: "2001:db8::7", UserCodeHash: userCodeHash, Status: perch.DevicePending,
			CreatedAt: start, ExpiresAt: start.Add(perch.DeviceSessionTTL)}
		if !reflect.DeepEqual(d, want) {
			t.Fatalf("CreateDeviceSession = %+v, want %+v", d, want)
		}
		if len(d.ID) != len(perch.DeviceSessionPrefix)+20 || d.ID[:4] != perch.DeviceSessionPrefix {
			t.Fatalf("id %q is not dev_ and 20 random characters", d.ID)
		}
		if got := mustDevice(t, s, d.ID); !reflect.DeepEqual(got, want) {
			t.Fatalf("read back %+v, want %+v", got, want)
		}

		clock.Advance(time.Minute)
		approved, err := s.ApproveDeviceSession(ctx, d.ID, ada.ID, "code-hash", true)
		if err != nil {
			t.Fatal(err)
		}
		decided := clock.Now()
		want.Status, want.UserID, want.CodeHash, want.UserCodeConfirmed, want.DecidedAt = perch.DeviceApproved, ada.ID, "code-hash", true, &decided
		if !reflect.DeepEqual(approved, want) {
			t.Fatalf("ApproveDeviceSession = %+v, want %+v", approved, want)
		}
		// Answered once: approving or denying again is a conflict, and
		// leaves the first answer (and its code) as it was.
		bob := mustCreateUser(t, s, "Bob Babbage", "bob@example.com")
		_, err = s.ApproveDeviceSession(ctx, d.ID, bob.ID, "other-hash", false)
		wantCode(t, err, perch.ECONFLICT)
		_, err = s.DenyDeviceSession(ctx, d.ID, bob.ID)
		wantCode(t, err, perch.ECONFLICT)
		if got := mustDevice(t, s, d.ID); !reflect.DeepEqual(got, want) {
			t.Fatalf("after the second answers: %+v, want %+v", got, want)
		}

		clock.Advance(time.Second)
		if err := s.ExchangeDeviceSession(ctx, d.ID, true); err != nil {
			t.Fatal(err)
		}
		exchanged := clock.Now()
		want.Status, want.ExchangedAt = perch.DeviceExchanged, &exchanged
		if got := mustDevice(t, s, d.ID); !reflect.DeepEqual(got, want) {
			t.Fatalf("after the exchange: %+v, want %+v", got, want)
		}
		wantCode(t, s.ExchangeDeviceSession(ctx, d.ID, true), perch.ECONFLICT)
		wantCode(t, s.ExchangeDeviceSession(ctx, d.ID, false), perch.ECONFLICT)

		// An exchanged sign-in stays exchanged past its expiry.
		clock.Advance(perch.DeviceSessionTTL)
		if got := mustDevice(t, s, d.ID); got.Status != perch.DeviceExchanged {
			t.Fatalf("status past expiry = %q, want exchanged", got.Status)
		}
	})
}

func TestDeviceSessionDenied(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		d := mustStartDevice(t, s, 8080)
		denied, err := s.DenyDeviceSession(ctx, d.ID, ada.ID)
		if err != nil || denied.Status != perch.DeviceDenied || denied.UserID != ada.ID || denied.CodeHash != "" || denied.DecidedAt == nil {
			t.Fatalf("DenyDeviceSession = %+v, %v", denied, err)
		}
		_, err = s.ApproveDeviceSession(ctx, d.ID, ada.ID, "code-hash", false)
		wantCode(t, err, perch.ECONFLICT)
		wantCode(t, s.ExchangeDeviceSession(ctx, d.ID, false), perch.ECONFLICT)
		if got := mustDevice(t, s, d.ID); got.Status != perch.DeviceDenied {
			t.Fatalf("status = %q, want denied", got.Status)
		}
	})
}

// TestDeviceSessionPollNeedsTheUserCode: a sign-in approved without the
// user code goes only to the holder of the one-time code, whatever a
// caller read before.
func TestDeviceSessionPollNeedsTheUserCode(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		d := mustStartDevice(t, s, 8080)
		approved, err := s.ApproveDeviceSession(ctx, d.ID, ada.ID, "code-hash", false)
		if err != nil || approved.UserCodeConfirmed {
			t.Fatalf("ApproveDeviceSession = %+v, %v", approved, err)
		}
		err = s.ExchangeDeviceSession(ctx, d.ID, true)
		wantCode(t, err, perch.ECONFLICT)
		if err != perch.ErrDeviceCallbackOnly {
			t.Fatalf("a poll's exchange: %v, want ErrDeviceCallbackOnly", err)
		}
		if got := mustDevice(t, s, d.ID); got.Status != perch.DeviceApproved || got.ExchangedAt != nil {
			t.Fatalf("after the refused poll: %+v", got)
		}
		if err := s.ExchangeDeviceSession(ctx, d.ID, false); err != nil {
			t.Fatalf("exchange with the one-time code: %v", err)
		}
		if got := mustDevice(t, s, d.ID); got.Status != perch.DeviceExchanged || got.UserCodeConfirmed {
			t.Fatalf("after the exchange: %+v", got)
		}
	})
}

func TestDeviceSessionPendingCannotBeExchanged(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		d := mustStartDevice(t, s, 8080)
		wantCode(t, s.ExchangeDeviceSession(context.Background(), d.ID, false), perch.ECONFLICT)
		wantCode(t, s.ExchangeDeviceSession(context.Background(), d.ID, true), perch.ECONFLICT)
		if got := mustDevice(t, s, d.ID); got.Status != perch.DevicePending {
			t.Fatalf("status = %q, want pending", got.Status)
		}
	})
}

func TestDeviceSessionExpires(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		early := mustStartDevice(t, s, 8080)
		late := mustStartDevice(t, s, 8081)
		approved := mustStartDevice(t, s, 8082)
		denied := mustStartDevice(t, s, 8083)
		if _, err := s.ApproveDeviceSession(ctx, approved.ID, ada.ID, "code-hash", false); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DenyDeviceSession(ctx, denied.ID, ada.ID); err != nil {
			t.Fatal(err)
		}

		clock.Advance(perch.DeviceSessionTTL - time.Millisecond)
		if _, err := s.ApproveDeviceSession(ctx, early.ID, ada.ID, "early-hash", true); err != nil {
			t.Fatalf("approving just before expiry: %v", err)
		}
		clock.Advance(time.Millisecond)
		for _, id := range []string{early.ID, late.ID, approved.ID, denied.ID} {
			if got := mustDevice(t, s, id); got.Status != perch.DeviceExpired {
				t.Errorf("%s: status %q, want expired", id, got.Status)
			}
		}
		_, err := s.ApproveDeviceSession(ctx, late.ID, ada.ID, "late-hash", true)
		wantCode(t, err, perch.EBADREQUEST)
		_, err = s.DenyDeviceSession(ctx, late.ID, ada.ID)
		wantCode(t, err, perch.EBADREQUEST)
		wantCode(t, s.ExchangeDeviceSession(ctx, approved.ID, false), perch.EBADREQUEST)
		wantCode(t, s.ExchangeDeviceSession(ctx, early.ID, true), perch.EBADREQUEST)
	})
}

func TestDeviceSessionUnknownIsNotFound(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		_, err := s.DeviceSession(ctx, "dev_unknown")
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.ApproveDeviceSession(ctx, "dev_unknown", ada.ID, "code-hash", false)
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.DenyDeviceSession(ctx, "dev_unknown", ada.ID)
		wantCode(t, err, perch.ENOTFOUND)
		wantCode(t, s.ExchangeDeviceSession(ctx, "dev_unknown", false), perch.ENOTFOUND)
	})
}

// race runs fn from n goroutines released together and returns their
// errors.
func race(n int, fn func() error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn()
		})
	}
	close(start)
	wg.Wait()
	return errs
}

func TestDeviceSessionConcurrentExchangesHaveOneWinner(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		for round := range 5 {
			d := mustStartDevice(t, s, 8080)
			if _, err := s.ApproveDeviceSession(ctx, d.ID, ada.ID, "code-hash", true); err != nil {
				t.Fatal(err)
			}
			won := 0
			for _, err := range race(8, func() error { return s.ExchangeDeviceSession(ctx, d.ID, round%2 == 0) }) {
				switch perch.ErrorCode(err) {
				case "":
					won++
				case perch.ECONFLICT:
				default:
					t.Fatalf("round %d: a losing exchange failed with %v, want conflict", round, err)
				}
			}
			if won != 1 {
				t.Fatalf("round %d: %d exchanges won, want exactly 1", round, won)
			}
		}
	})
}

func TestDeviceSessionConcurrentAnswersHaveOneWinner(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada Lovelace", "ada@example.com")
		d := mustStartDevice(t, s, 8080)
		var mu sync.Mutex
		n := 0
		winner := ""
		errs := race(8, func() error {
			mu.Lock()
			n++
			deny := n%2 == 0
			mu.Unlock()
			var got *perch.DeviceSession
			var err error
			if deny {
				got, err = s.DenyDeviceSession(ctx, d.ID, ada.ID)
			} else {
				got, err = s.ApproveDeviceSession(ctx, d.ID, ada.ID, "code-hash", false)
			}
			if err == nil {
				mu.Lock()
				winner = got.Status
				mu.Unlock()
			}
			return err
		})
		won := 0
		for _, err := range errs {
			switch perch.ErrorCode(err) {
			case "":
				won++
			case perch.ECONFLICT:
			default:
				t.Fatalf("a losing answer failed with %v, want conflict", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d answers won, want exactly 1", won)
		}
		if got := mustDevice(t, s, d.ID); got.Status != winner {
			t.Fatalf("stored status %q, but the winner was told %q", got.Status, winner)
		}
	})
}

func TestDeviceSessionsArePrunedAfterRetention(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		old := mustStartDevice(t, s, 8080)
		clock.Advance(perch.DeviceSessionTTL + store.DeviceSessionRetention - time.Minute)
		recent := mustStartDevice(t, s, 8081)
		clock.Advance(time.Minute)
		if _, err := s.PruneSessions(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := s.DeviceSession(ctx, old.ID)
		wantCode(t, err, perch.ENOTFOUND)
		// Expired a while ago but within retention: a late poll still
		// hears "expired".
		clock.Advance(perch.DeviceSessionTTL)
		if _, err := s.PruneSessions(ctx); err != nil {
			t.Fatal(err)
		}
		if got := mustDevice(t, s, recent.ID); got.Status != perch.DeviceExpired {
			t.Fatalf("status = %q, want expired", got.Status)
		}
	})
}
