package main

import (
	"io"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
)

// The billing settings: off by default; a provider needs its key, webhook
// secret and prices; prices name the plans; secrets are never repeated.
func TestBillingSettings(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := parseConfig("serve", nil, env(nil), io.Discard)
	if err != nil || c.BillingProvider != "" || paymentProvider(c) != nil {
		t.Fatalf("default: %q, %v", c.BillingProvider, err)
	}

	const secret = "sk_test_a-secret-value"
	_, err = parseConfig("serve", nil, env(map[string]string{"PERCH_BILLING_PROVIDER": "stripe", "PERCH_STRIPE_SECRET_KEY": secret}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "PERCH_STRIPE_WEBHOOK_SECRET") || !strings.Contains(err.Error(), "PERCH_STRIPE_PRICES") {
		t.Fatalf("stripe without its secret and prices: %v", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("the error repeats the key: %v", err)
	}
	_, err = parseConfig("serve", nil, env(map[string]string{"PERCH_BILLING_PROVIDER": "square"}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "PERCH_BILLING_PROVIDER") {
		t.Fatalf("an unknown provider: %v", err)
	}
	_, err = parseConfig("serve", nil, env(map[string]string{"PERCH_PADDLE_PRICES": "gold=pri_1"}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "PERCH_PADDLE_PRICES") {
		t.Fatalf("a price for no plan: %v", err)
	}

	c, err = parseConfig("serve", nil, env(map[string]string{"PERCH_BILLING_PROVIDER": "paddle", "PERCH_PADDLE_API_KEY": "pdl_key",
		"PERCH_PADDLE_WEBHOOK_SECRET": "pdl_ntfset_x", "PERCH_PADDLE_PRICES": "team=pri_team,enterprise=pri_ent",
		"PERCH_STRIPE_WEBHOOK_SECRET": "whsec_alone", "PERCH_STRIPE_PRICES": "solo=price_solo"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if p := paymentProvider(c); p == nil || p.Name() != perch.BillingPaddle || p.PlanOf("pri_ent") != "enterprise" {
		t.Fatalf("the provider: %v", p)
	}
	plans := pricePlans(c.Stripe.Prices, c.Paddle.Prices)
	if plans["price_solo"] != "solo" || plans["pri_team"] != "team" || c.Stripe.WebhookSecret != "whsec_alone" {
		t.Errorf("prices of both providers map to plans: %v", plans)
	}
}
