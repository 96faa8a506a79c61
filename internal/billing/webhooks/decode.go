// Package webhooks reads the payment providers' webhooks: the Stripe and
// Paddle events Perch applies to an organisation's subscription
// (StripeEvent, PaddleEvent, both into a perch.BillingEvent) and their
// signatures (VerifyStripeSignature, VerifyPaddleSignature).
//
// Everything here is a pure function of the header and body: no I/O and no
// clock of its own. Bad input is a *perch.Error of code perch.EBADREQUEST
// whose message can be shown to the provider as it is. Talking to the
// providers (checkout, the customer portal) is the parent package's job.
package webhooks

import "github.com/perch-dev/perch"

// The decoding and text helpers are the domain package's (perch.DecodeObject,
// perch.OneLine, ...), shared with internal/senders.

// badRequest is a perch.EBADREQUEST error whose message the provider is shown.
func badRequest(format string, args ...any) error {
	return perch.Errorf(perch.EBADREQUEST, format, args...)
}
