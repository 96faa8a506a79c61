package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/billing/webhooks"
	"github.com/perch-dev/perch/internal/store"
)

// The payment receivers (docs/DESIGN.md, Billing): Stripe at
// /webhooks/payments-a, Paddle at /webhooks/payments-b. They authenticate
// by the provider's signature, apply each event once and in order to the
// organisation's subscription, and tell the owners and admins what they
// must act on.

// paymentSender is what differs between the two payment receivers.
type paymentSender struct {
	provider string // perch.BillingStripe or perch.BillingPaddle
	source   string // the notifications' source: payments-a or payments-b
	header   string // the signature's header
	// tolerance is how far a signature's time may be from now: the
	// provider's own libraries' window (webhooks.StripeTolerance, 300 s;
	// webhooks.PaddleTolerance, 5 s).
	tolerance time.Duration
	secret    func(o *Options) string
	verify    func(secret, header string, body []byte, now time.Time, tolerance time.Duration) error
	parse     func(body []byte) (perch.BillingEvent, bool, error)
}

var (
	stripeSender = paymentSender{provider: perch.BillingStripe, source: perch.SourcePaymentsA, header: "Stripe-Signature", tolerance: webhooks.StripeTolerance,
		secret: func(o *Options) string { return o.Billing.StripeWebhookSecret }, verify: webhooks.VerifyStripeSignature, parse: webhooks.StripeEvent}
	paddleSender = paymentSender{provider: perch.BillingPaddle, source: perch.SourcePaymentsB, header: "Paddle-Signature", tolerance: webhooks.PaddleTolerance,
		secret: func(o *Options) string { return o.Billing.PaddleWebhookSecret }, verify: webhooks.VerifyPaddleSignature, parse: webhooks.PaddleEvent}
)

// DefaultPaymentLimit is the payment receivers' allowance per client
// address (Options.PaymentLimit), in a bucket of their own. A provider
// delivers one request per event from a handful of published addresses
// (Stripe about a dozen, Paddle six), and an organisation's subscription
// makes a few events a month, so a real provider stays far below 600 a
// minute from any one address; were it ever over, it retries a 429 with
// backoff (both do, for days), so no event is lost. An address that is not
// a provider's gets no more than that many signature checks of bodies of
// up to 1 MiB.
var DefaultPaymentLimit = perch.Limit{Count: 600, Period: time.Minute}

// paymentReceiver serves a payment provider's webhook.
func (s *Server) paymentReceiver(p paymentSender) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		secret := p.secret(&s.opts)
		if secret == "" {
			return perch.Errorf(perch.EBILLINGUNAVAILABLE, "This receiver has no signing secret configured, and payment events are never taken unsigned.")
		}
		body, err := readBody(r)
		if err != nil {
			return err
		}
		if err := p.verify(secret, r.Header.Get(p.header), body, s.now(), p.tolerance); err != nil {
			return perch.Errorf(perch.EBADREQUEST, "%s: %s", p.header, perch.ErrorMessage(err))
		}
		ev, ok, err := p.parse(body)
		if err != nil {
			return err
		}
		if !ok {
			writeJSON(w, http.StatusOK, receipt{Received: true, Ignored: fmt.Sprintf("%s is not an event Perch acts on.", ev.Type)})
			return nil
		}
		out, err := s.billingDB.ApplyBillingEvent(r.Context(), ev, s.opts.Billing.PricePlans[ev.PriceID])
		if err != nil {
			return err
		}
		switch {
		case out.Duplicate:
			writeJSON(w, http.StatusOK, receipt{Received: true, Duplicate: true})
			return nil
		case out.Ignored != "":
			s.logIgnoredPayment(r, p, ev, out)
			writeJSON(w, http.StatusOK, receipt{Received: true, Ignored: out.Ignored})
			return nil
		case out.OrgID == "":
			writeJSON(w, http.StatusOK, receipt{Received: true, Ignored: "The event concerns no organisation of this server."})
			return nil
		case out.Stale:
			writeJSON(w, http.StatusOK, receipt{Received: true, Ignored: "A later event of this subscription was applied already."})
			return nil
		}
		s.subscriptionChanged(r, p, ev, out)
		writeJSON(w, http.StatusOK, receipt{Received: true})
		return nil
	}
}

// logIgnoredPayment logs an event that named an organisation and changed
// nothing (store.BillingOutcome.Ignored). Naming another organisation than
// the bound one is a warning: signed by the provider, it was still made by
// someone trying to move a subscription, or to pay for an organisation
// not theirs. Naming one before anything is bound is what Stripe does with
// a new subscription's first events, sent before the checkout's
// completion that binds it, and is only noted.
func (s *Server) logIgnoredPayment(r *http.Request, p paymentSender, ev perch.BillingEvent, out *store.BillingOutcome) {
	level, msg := slog.LevelInfo, "a payment event named an organisation that no completed checkout is linked to; it changed nothing"
	switch {
	case out.OtherProvider != "":
		// One provider per organisation: refused, and kept in the
		// organisation's audit log, where its owners look.
		level, msg = slog.LevelWarn, "a payment event concerned an organisation billed through the other provider; it changed nothing"
		s.audit(r, perch.AuditEntry{Action: perch.AuditBillingRefused, Actor: perch.AuditActor{Type: perch.ActorProvider, ID: p.provider},
			Target: orgTarget(out.Bound), OrgID: out.Bound, Changes: map[string]any{"event": ev.Type, "event_id": ev.ID,
				"provider": p.provider, "billed_through": out.OtherProvider}})
	case out.Bound != "":
		level, msg = slog.LevelWarn, "a payment event named another organisation than the one its subscription is linked to; it changed nothing"
	}
	s.log.Log(r.Context(), level, msg, "provider", p.provider, "event_id", ev.ID, "type", ev.Type, "named_org", ev.OrgID,
		"checkout_id", ev.CheckoutID, "subscription_id", ev.SubscriptionID, "customer_id", ev.CustomerID, "linked_org", out.Bound,
		"request_id", requestID(r))
}

// subscriptionChanged audits an applied event and sends its alert.
func (s *Server) subscriptionChanged(r *http.Request, p paymentSender, ev perch.BillingEvent, out *store.BillingOutcome) {
	changes := map[string]any{"event": ev.Type, "event_id": ev.ID}
	b, a := out.Before, out.After
	if b.Plan != a.Plan {
		changes["plan"] = []string{b.Plan, a.Plan}
	}
	if b.Status != a.Status {
		changes["status"] = []string{b.Status, a.Status}
	}
	if b.CancelAtPeriodEnd != a.CancelAtPeriodEnd {
		changes["cancel_at_period_end"] = a.CancelAtPeriodEnd
	}
	if seats(b) != seats(a) {
		changes["seats"] = []any{seatsValue(b), seatsValue(a)}
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditSubscriptionChanged, Actor: perch.AuditActor{Type: perch.ActorProvider, ID: p.provider},
		Target: orgTarget(out.OrgID), OrgID: out.OrgID, Changes: changes})
	// Owners hear of a change, not of every retry: a payment that fails
	// again while the organisation is behind, or a second cancellation
	// event (Paddle sends one per transaction and subscription), is quiet.
	switch {
	case ev.Alert == perch.AlertPaymentFailed && b.Status != perch.PlanPastDue:
		s.tellBillers(r.Context(), out.OrgID, p.source, p.provider+"|"+ev.ID, perch.SeverityError,
			"A payment failed", "The last payment for the "+a.Plan+" plan did not go through. Update the payment method in the billing portal to keep the plan.")
	case ev.Alert == perch.AlertCanceled && b.Status != perch.PlanCanceled:
		s.tellBillers(r.Context(), out.OrgID, p.source, p.provider+"|"+ev.ID, perch.SeverityWarning,
			"The subscription was canceled", "The organisation's "+a.Plan+" subscription has ended. Choose a plan on the billing page to continue.")
	case ev.Alert == perch.AlertTrialEnding && a.Status == perch.PlanTrialing && a.TrialEndsAt != nil:
		// Stripe sends it three days before the trial's end (at once, when
		// the trial is shorter); the event's id keeps it to one notice.
		days := trialDays(a.TrialEndsAt.Sub(ev.OccurredAt))
		s.tellBillers(r.Context(), out.OrgID, p.source, p.provider+"|"+ev.ID, perch.SeverityWarning,
			fmt.Sprintf("The trial ends in %d %s", days, plural(days, "day", "days")),
			fmt.Sprintf("The organisation's %s trial ends on %s; then the subscription bills the payment method on file. "+
				"The billing portal changes or cancels it.", a.Plan, a.TrialEndsAt.UTC().Format("2 January")))
	}
}

// trialDays is a trial's remaining time in whole days, rounded up and at
// least one: Stripe's "three days" notice is sent 72 hours before.
func trialDays(left time.Duration) int {
	return max(1, int((left+24*time.Hour-time.Minute)/(24*time.Hour)))
}

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// seats is a subscription's billed seats, -1 for none.
func seats(sub *perch.Subscription) int {
	if sub == nil || sub.Seats == nil {
		return -1
	}
	return *sub.Seats
}

// seatsValue is a subscription's billed seats as the audit log shows
// them: a number, or null for none.
func seatsValue(sub *perch.Subscription) any {
	if n := seats(sub); n >= 0 {
		return n
	}
	return nil
}

// tellBillers notifies the organisation's owners and admins, each on
// their own, through the normal notification path (stored, then pushed to
// their menu bars), once per key.
func (s *Server) tellBillers(ctx context.Context, orgID, source, key, severity, title, message string) {
	ctx = context.WithoutCancel(ctx)
	ids, err := s.billingDB.OrgOwnersAndAdmins(ctx, orgID)
	if err != nil {
		s.log.Error("finding whom to tell about billing failed", "org", orgID, "err", err)
		return
	}
	batch := make([]store.NewNotification, len(ids))
	for i, id := range ids {
		batch[i] = store.NewNotification{DedupeKey: "billing|" + key + "|" + id, Notification: perch.Notification{
			Tab: perch.TabPayments, Title: title, Message: message, Severity: severity, Source: source,
			URL: s.baseURL() + billingPage, Scope: perch.Scope{Type: perch.ScopeUser, ID: id}}}
	}
	if len(batch) == 0 {
		return
	}
	if _, err := s.ingest.Write(ctx, batch...); err != nil {
		s.log.Error("storing billing notifications failed", "org", orgID, "err", err)
	}
}

// trialNotice is how long before its end a trial's owners are told.
const trialNotice = 3 * 24 * time.Hour

// BillingJobs runs billing's background work once (cmd/perch runs it on
// one instance of the cluster at a time): with billing on, trials that
// ended unpaid move to solo with status none; trials ending within three
// days are announced to the owners and admins, once each.
func (s *Server) BillingJobs(ctx context.Context) error {
	if s.opts.Billing.Provider == nil {
		return nil // billing off: trials never end
	}
	now := s.now()
	expired, err := s.billingDB.ExpireTrials(ctx, now)
	if err != nil {
		return fmt.Errorf("expiring trials: %w", err)
	}
	for _, e := range expired {
		s.record(ctx, perch.AuditEntry{Action: perch.AuditTrialExpired, Actor: perch.AuditActor{Type: perch.ActorSystem},
			Target: orgTarget(e.OrgID), OrgID: e.OrgID, At: now, Changes: map[string]any{"plan": []string{e.Plan, "solo"}, "status": perch.PlanNone}})
	}
	source := perch.SourcePaymentsA
	if s.opts.Billing.Provider.Name() == perch.BillingPaddle {
		source = perch.SourcePaymentsB
	}
	ending, err := s.billingDB.TrialsEndingSoon(ctx, now, trialNotice)
	if err != nil {
		return fmt.Errorf("finding trials that end soon: %w", err)
	}
	for _, t := range ending {
		days := max(1, int(t.EndsAt.Sub(now).Hours()+23)/24)
		s.tellBillers(ctx, t.OrgID, source, "trial|"+t.OrgID+"|"+t.EndsAt.UTC().Format(time.RFC3339), perch.SeverityWarning,
			"The trial ends soon", fmt.Sprintf("The organisation's trial ends in %d day(s), on %s. Choose a plan on the billing page to keep your team's notifications.",
				days, t.EndsAt.UTC().Format("2 January")))
	}
	return nil
}
