package billing

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func isPlan(s string) bool { return s == "solo" || s == "team" || s == "enterprise" }

func TestParsePrices(t *testing.T) {
	t.Parallel()
	good := []struct {
		in   string
		want Prices
	}{
		{"", Prices{}},
		{"   ", Prices{}},
		{"solo=price_1", Prices{"solo": "price_1"}},
		{"solo=price_1,team=price_2,enterprise=price_3", Prices{"solo": "price_1", "team": "price_2", "enterprise": "price_3"}},
		{" solo = pri_01a , team=pri_01b ", Prices{"solo": "pri_01a", "team": "pri_01b"}},
	}
	for _, tc := range good {
		got, err := ParsePrices(tc.in, isPlan)
		if err != nil {
			t.Errorf("ParsePrices(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParsePrices(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}

	bad := []struct {
		in   string
		want []string // every problem is named
	}{
		{"solo", []string{`entry 1 "solo" is not slug=price_id`}},
		{"gold=price_1", []string{`entry 1: "gold" is not a plan`}},
		{"solo=", []string{`entry 1: plan "solo" has an empty price id`}},
		{"=price_1", []string{`entry 1 "=price_1" has no plan slug`}},
		{"solo=price 1", []string{`entry 1: plan "solo" has a price id with spaces`}},
		{"solo=price_1,solo=price_2", []string{`entry 2: plan "solo" is given twice`}},
		{"solo=price_1,team=price_1", []string{`entry 2: price "price_1" is given to both "solo" and "team"`}},
		{"solo=price_1,,team=price_2,", []string{"entry 2 is empty", "entry 4 is empty"}},
		{"gold=x,team=", []string{`"gold" is not a plan`, `plan "team" has an empty price id`}},
	}
	for _, tc := range bad {
		got, err := ParsePrices(tc.in, isPlan)
		if err == nil {
			t.Errorf("ParsePrices(%q) = %v, want an error", tc.in, got)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParsePrices(%q) = %q, want it to say %q", tc.in, err, w)
			}
		}
	}

	if got, err := ParsePrices("anything=price_1", nil); err != nil || got["anything"] != "price_1" {
		t.Errorf("ParsePrices with no plan check = %v, %v; want any slug accepted", got, err)
	}
}

func TestPlanOf(t *testing.T) {
	t.Parallel()
	prices := Prices{"solo": "price_solo", "team": "price_team"}
	for _, p := range []Provider{
		NewStripe("sk_test_123", "", prices, nil),
		NewPaddle("pdl_key", "", prices, nil),
	} {
		for price, want := range map[string]string{"price_solo": "solo", "price_team": "team", "price_other": "", "": ""} {
			if got := p.PlanOf(price); got != want {
				t.Errorf("%s: PlanOf(%q) = %q, want %q", p.Name(), price, got, want)
			}
		}
	}
	prices["enterprise"] = "price_ent" // the providers keep their own copy
	if got := NewStripe("k", "", Prices{}, nil).PlanOf("price_ent"); got != "" {
		t.Errorf("PlanOf of a price added later = %q", got)
	}
}

func TestCheckoutNeedsAPriceAndAnOrganisation(t *testing.T) {
	t.Parallel()
	prices := Prices{"solo": "price_solo"}
	for _, p := range []Provider{
		NewStripe("sk_test_123", "http://127.0.0.1:1", prices, nil),
		NewPaddle("pdl_key", "http://127.0.0.1:1", prices, nil),
	} {
		_, err := p.Checkout(t.Context(), CheckoutRequest{OrgID: "org_1", Plan: "team"})
		if !errors.Is(err, ErrNoPrice) || !strings.Contains(err.Error(), `"team"`) {
			t.Errorf("%s: Checkout of a plan without a price: %v, want ErrNoPrice naming the plan", p.Name(), err)
		}
		_, err = p.Checkout(t.Context(), CheckoutRequest{Plan: "solo"})
		if err == nil || !strings.Contains(err.Error(), "organisation id") {
			t.Errorf("%s: Checkout without an organisation: %v", p.Name(), err)
		}
		_, err = p.Portal(t.Context(), "", "", "https://perch.test/billing")
		if err == nil || !strings.Contains(err.Error(), "no "+map[string]string{"stripe": "Stripe", "paddle": "Paddle"}[p.Name()]+" customer") {
			t.Errorf("%s: Portal without a customer: %v", p.Name(), err)
		}
	}
}
