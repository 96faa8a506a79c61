package storetest_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// pendingSeatJobs is 1 when orgID has a seat job queued that has not
// started, else 0 (the organisation's mark, which seatsChanged sets with
// the job and StartSeatJob clears).
func pendingSeatJobs(tb testing.TB, db *sql.DB, s *store.Store, orgID string) int {
	tb.Helper()
	q := `SELECT COUNT(*) FROM orgs WHERE id = ? AND seat_job_at IS NOT NULL`
	if s.Dialect() == store.Postgres {
		q = `SELECT COUNT(*) FROM orgs WHERE id = $1 AND seat_job_at IS NOT NULL`
	}
	var n int
	if err := db.QueryRowContext(context.Background(), q, orgID).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// runSeatJob claims orgID's seat job and starts it, as the worker does,
// records that the provider now bills the seat count, and completes it; it
// answers the count. It fails the test unless exactly one seat job of
// orgID was due.
func runSeatJob(tb testing.TB, s *store.Store, clock *storetest.Clock, orgID string) int {
	tb.Helper()
	ctx := context.Background()
	jobs, err := s.ClaimJobs(ctx, clock.Now(), time.Minute, 10)
	if err != nil {
		tb.Fatal(err)
	}
	var mine []store.Job
	for _, j := range jobs {
		if j.Kind == store.JobBillingSeats && j.OrgID == orgID {
			mine = append(mine, j)
		}
	}
	if len(mine) != 1 {
		tb.Fatalf("%d seat jobs of %s claimed (%d jobs in all), want 1", len(mine), orgID, len(jobs))
	}
	st, err := s.StartSeatJob(ctx, orgID)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.RecordSeats(ctx, orgID, st.SubscriptionID, st.Seats); err != nil {
		tb.Fatal(err)
	}
	if err := s.CompleteJob(ctx, mine[0].ID); err != nil {
		tb.Fatal(err)
	}
	return st.Seats
}

// TestEveryMembershipChangeQueuesOneSeatJob: each way a member joins,
// leaves, is disabled or comes back queues the seat job of an organisation
// with a live provider subscription, in the change's own transaction; a
// job still waiting takes the next changes in (one update with the final
// count), and a change once a job has started queues another; an
// organisation without a live subscription gets none, nor does a
// provider's event saying it bills the count.
func TestEveryMembershipChangeQueuesOneSeatJob(t *testing.T) {
	t.Parallel()
	storetest.RunWithSQL(t, func(t *testing.T, s *store.Store, db *sql.DB) {
		ctx := context.Background()
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		org := ada.OrgID
		pending := func(what string, want int) {
			t.Helper()
			if n := pendingSeatJobs(t, db, s, org); n != want {
				t.Fatalf("%s: %d seat jobs waiting, want %d", what, n, want)
			}
		}

		// Before any subscription, joining queues nothing.
		if _, err := s.CreateInvitation(ctx, org, ada.ID, "bea@example.com", perch.RoleMember, "inv-bea", "mail-inv-bea"); err != nil {
			t.Fatal(err)
		}
		bea, err := s.CreateInvitedUser(ctx, "Bea", "bea@example.com", "hash", "inv-bea")
		if err != nil {
			t.Fatal(err)
		}
		pending("a member joined an organisation on its own trial", 0)

		// A subscription that bills the two members queues nothing; one
		// that bills another count does.
		ev := checkoutEvent(t, s, org, "cs_seats", "evt_seats_1", clock.Now())
		ev.CustomerID, ev.SubscriptionID, ev.Status, ev.Seats = "cus_seats", "sub_seats", perch.PlanActive, new(2)
		mustApply(t, s, ev, "team")
		pending("the subscription bills the seat count", 0)
		if sub := mustSubscription(t, s, org); sub.Seats == nil || *sub.Seats != 2 {
			t.Fatalf("subscription seats %v, want 2", sub.Seats)
		}
		up := stripeEvent("evt_seats_2", clock.Now())
		up.SubscriptionID, up.Seats = "sub_seats", new(5)
		mustApply(t, s, up, "")
		pending("the provider says it bills 5 of 2", 1)
		if n := runSeatJob(t, s, clock, org); n != 2 {
			t.Fatalf("seat count %d, want 2", n)
		}
		pending("after the job", 0)

		// Every path of membership, each on its own.
		steps := []struct {
			what   string
			change func() error
			seats  int
		}{
			{"an invited account made", func() error {
				if _, err := s.CreateInvitation(ctx, org, ada.ID, "cy@example.com", perch.RoleMember, "inv-cy", "mail-inv-cy"); err != nil {
					return err
				}
				_, err := s.CreateInvitedUser(ctx, "Cy", "cy@example.com", "hash", "inv-cy")
				return err
			}, 3},
			{"an invitation accepted by someone of another organisation", func() error {
				dee := mustCreateUser(t, s, "Dee", "dee@example.com")
				if _, err := s.CreateInvitation(ctx, org, ada.ID, "dee@example.com", perch.RoleMember, "inv-dee", "mail-inv-dee"); err != nil {
					return err
				}
				_, err := s.AcceptInvitation(ctx, "inv-dee", dee)
				return err
			}, 4},
			{"a SCIM user made", func() error {
				_, err := s.CreateSCIMUser(ctx, org, scimWrite("eve", "eve@example.com", true))
				return err
			}, 5},
			{"a SCIM user deactivated", func() error {
				eve := scimMember(t, s, org, "eve")
				_, err := s.UpdateSCIMUser(ctx, org, eve, replace(scimWrite("eve", "eve@example.com", false)))
				return err
			}, 4},
			{"a SCIM user reactivated", func() error {
				eve := scimMember(t, s, org, "eve")
				_, err := s.UpdateSCIMUser(ctx, org, eve, replace(scimWrite("eve", "eve@example.com", true)))
				return err
			}, 5},
			{"an account made at its first SAML sign-in", func() error {
				_, err := s.CreateSSOUser(ctx, org, "fay@example.com", "Fay", perch.RoleMember)
				return err
			}, 6},
			{"a platform admin disables a member", func() error {
				_, err := s.UpdateUserAsAdmin(ctx, bea.ID, perch.AdminUserUpdate{Disabled: new(true)}, nil)
				return err
			}, 5},
			{"a platform admin enables them again", func() error {
				_, err := s.UpdateUserAsAdmin(ctx, bea.ID, perch.AdminUserUpdate{Disabled: new(false)}, nil)
				return err
			}, 6},
			{"a member removed", func() error { return s.RemoveMember(ctx, org, bea.ID) }, 5},
			{"a SCIM user deleted", func() error {
				_, err := s.DeleteSCIMUser(ctx, org, scimMember(t, s, org, "eve"), func(*store.SCIMUser) error { return nil })
				return err
			}, 4},
		}
		for _, step := range steps {
			if err := step.change(); err != nil {
				t.Fatalf("%s: %v", step.what, err)
			}
			pending(step.what, 1)
			if n := runSeatJob(t, s, clock, org); n != step.seats {
				t.Fatalf("%s: the job found %d seats, want %d", step.what, n, step.seats)
			}
		}
		// The organisations members left for have no subscription: nothing.
		if _, err := s.Seats(ctx, org); err != nil {
			t.Fatal(err)
		}

		// A burst of changes waits in one job, which reads the final count.
		for _, name := range []string{"gus", "hal", "ivy"} {
			if _, err := s.CreateSCIMUser(ctx, org, scimWrite(name, name+"@example.com", true)); err != nil {
				t.Fatal(err)
			}
		}
		pending("three joins", 1)
		if n := runSeatJob(t, s, clock, org); n != 7 {
			t.Fatalf("after three joins the job found %d seats, want 7", n)
		}

		// A change once a job has started (it read the count) queues
		// another, though the first has not finished.
		if _, err := s.CreateSCIMUser(ctx, org, scimWrite("kim", "kim@example.com", true)); err != nil {
			t.Fatal(err)
		}
		jobs, err := s.ClaimJobs(ctx, clock.Now(), time.Minute, 10)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claimed %v, %v", jobs, err)
		}
		if st, err := s.StartSeatJob(ctx, org); err != nil || st.Seats != 8 || !st.Live() {
			t.Fatalf("StartSeatJob = %+v, %v", st, err)
		}
		if _, err := s.UpdateUserAsAdmin(ctx, scimMember(t, s, org, "kim"), perch.AdminUserUpdate{Disabled: new(true)}, nil); err != nil {
			t.Fatal(err)
		}
		pending("a member disabled while a job runs", 1)
		if err := s.RecordSeats(ctx, org, "sub_seats", 8); err != nil {
			t.Fatal(err)
		}
		if err := s.CompleteJob(ctx, jobs[0].ID); err != nil {
			t.Fatal(err)
		}
		if n := runSeatJob(t, s, clock, org); n != 7 {
			t.Fatalf("the second job found %d seats, want 7", n)
		}

		// A job gone before it started (removed by hand) holds back the
		// next one only as long as the queue retries anything.
		if _, err := s.CreateSCIMUser(ctx, org, scimWrite("lee", "lee@example.com", true)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `DELETE FROM jobs WHERE kind = 'billing.seats'`); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateSCIMUser(ctx, org, scimWrite("max", "max@example.com", true)); err != nil {
			t.Fatal(err)
		}
		if jobs, err := s.ClaimJobs(ctx, clock.Now(), time.Minute, 10); err != nil || len(jobs) != 0 {
			t.Fatalf("within a day of the lost job: %v, %v", jobs, err)
		}
		clock.Advance(perch.WorkflowRetryFor + time.Minute)
		if _, err := s.CreateSCIMUser(ctx, org, scimWrite("ned", "ned@example.com", true)); err != nil {
			t.Fatal(err)
		}
		if n := runSeatJob(t, s, clock, org); n != 10 {
			t.Fatalf("after the lost job the next found %d seats, want 10", n)
		}

		// A canceled subscription bills nobody: no job, and no seats shown.
		gone := stripeEvent("evt_seats_3", clock.Now())
		gone.SubscriptionID, gone.Status = "sub_seats", perch.PlanCanceled
		mustApply(t, s, gone, "")
		if _, err := s.CreateSCIMUser(ctx, org, scimWrite("jo", "jo@example.com", true)); err != nil {
			t.Fatal(err)
		}
		pending("a join after the cancellation", 0)
		if sub := mustSubscription(t, s, org); sub.Seats != nil {
			t.Fatalf("a canceled subscription shows %d seats", *sub.Seats)
		}
		st, err := s.Seats(ctx, org)
		if err != nil || st.Live() || st.Seats != 11 {
			t.Fatalf("Seats = %+v, %v; want 11 enabled members and no live subscription", st, err)
		}
	})
}

// scimMember is the id of orgID's SCIM user userName.
func scimMember(tb testing.TB, s *store.Store, orgID, userName string) string {
	tb.Helper()
	users, _, err := s.SCIMUsers(context.Background(), orgID, []store.SCIMCondition{{Field: store.SCIMUserName, String: userName}}, 0, 1)
	if err != nil || len(users) != 1 {
		tb.Fatalf("SCIM user %s: %v, %v", userName, users, err)
	}
	return users[0].ID
}
