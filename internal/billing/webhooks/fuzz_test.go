package webhooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/testenv"
)

func FuzzStripeEvent(f *testing.F) {
	for _, b := range testenv.Seeds(f, "stripe") {
		f.Add(b)
	}
	for _, b := range sharedBillingSeeds(f, "stripe") {
		f.Add(b)
	}
	for _, s := range []string{`{}`, `{"id":"e","type":"invoice.paid","created":1,"data":{"object":{"subscription":{}}}}`,
		`{"id":"e","type":"customer.subscription.updated","created":1,"data":{"object":{"id":"s","status":"canceled"},"previous_attributes":[]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, ok, err := StripeEvent(body)
		checkBillingEvent(t, ev, ok, err, perch.BillingStripe)
	})
}

func FuzzPaddleEvent(f *testing.F) {
	for _, b := range testenv.Seeds(f, "paddle") {
		f.Add(b)
	}
	for _, b := range sharedBillingSeeds(f, "paddle") {
		f.Add(b)
	}
	for _, s := range []string{`{}`, `{"event_id":"e","event_type":"subscription.updated","occurred_at":"2024-01-01T00:00:00Z","data":{"id":"s","scheduled_change":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, ok, err := PaddleEvent(body)
		checkBillingEvent(t, ev, ok, err, perch.BillingPaddle)
	})
}

// sharedBillingSeeds returns the shared fixtures of a payment provider as
// the bodies it would send, or none when the fixtures are not checked out:
// the fuzzer still runs on its own seeds then.
func sharedBillingSeeds(f *testing.F, provider string) [][]byte {
	f.Helper()
	dir := os.Getenv("PERCH_FIXTURES_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "..", "shared", "fixtures")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "webhooks", provider, "*.json"))
	var bodies [][]byte
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		bodies = append(bodies, fixtureBody(provider, filepath.Base(name), "evt_seed", b))
	}
	return bodies
}

// checkBillingEvent is the property both payment parsers keep on any input:
// a bad request with a message and nothing else, or an event of the
// provider with an id and a type whose every field the server can store.
func checkBillingEvent(t *testing.T, ev perch.BillingEvent, ok bool, err error, provider string) {
	t.Helper()
	if err != nil {
		if code := perch.ErrorCode(err); code != perch.EBADREQUEST {
			t.Fatalf("error code = %q (%v), want %q", code, err, perch.EBADREQUEST)
		}
		if perch.ErrorMessage(err) == "" {
			t.Fatal("bad request without a message")
		}
		if ok || ev != (perch.BillingEvent{}) {
			t.Fatalf("error %v came with ok = %v and %+v", err, ok, ev)
		}
		return
	}
	if ev.ID == "" || ev.Type == "" || ev.Provider != provider || ev.OccurredAt.IsZero() {
		t.Fatalf("event without its envelope: %+v", ev)
	}
	if !ok {
		if ev != (perch.BillingEvent{Provider: ev.Provider, ID: ev.ID, Type: ev.Type, OccurredAt: ev.OccurredAt}) {
			t.Fatalf("an ignored event says more than its envelope: %+v", ev)
		}
		return
	}
	if ev.OrgID == "" && ev.CustomerID == "" && ev.SubscriptionID == "" {
		t.Fatalf("an event names no organisation, customer or subscription: %+v", ev)
	}
	if ev.Status != "" && !perch.ValidPlanStatus(ev.Status) || ev.Status == perch.PlanNone {
		t.Fatalf("status %q", ev.Status)
	}
	if ev.Alert != "" && ev.Alert != perch.AlertPaymentFailed && ev.Alert != perch.AlertCanceled && ev.Alert != perch.AlertTrialEnding {
		t.Fatalf("alert %q", ev.Alert)
	}
	if ev.Seats != nil && (*ev.Seats < 0 || *ev.Seats > maxSeats) {
		t.Fatalf("seats %d cannot be stored", *ev.Seats)
	}
	for _, id := range []string{ev.ID, ev.Type, ev.OrgID, ev.CustomerID, ev.SubscriptionID, ev.PriceID} {
		if len(id) > maxBillingID || strings.ContainsFunc(id, unicode.IsControl) || !utf8.ValidString(id) {
			t.Fatalf("id %q cannot be stored", id)
		}
	}
	for _, at := range []*time.Time{&ev.OccurredAt, ev.TrialEndsAt, ev.PeriodEnd} {
		if at != nil && (at.Year() < 1970 || at.Year() > 9999) {
			t.Fatalf("time %v cannot be stored", at)
		}
	}
}
