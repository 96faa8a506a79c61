package perch

import (
	"fmt"
	"testing"
)

// TestFeatureResolution: an override for the organisation beats the
// rollout, which beats the default.
func TestFeatureResolution(t *testing.T) {
	t.Parallel()
	// Find a user inside a 50% rollout of "beta" and one outside it.
	in, out := "", ""
	for i := 0; in == "" || out == ""; i++ {
		id := fmt.Sprintf("user%d", i)
		if InRollout("beta", id, 50) {
			in = cmpOr(in, id)
		} else {
			out = cmpOr(out, id)
		}
	}
	cases := []struct {
		name    string
		flag    FeatureFlag
		user    string
		want    bool
		wantOff bool // the same flag for a user of another organisation
	}{
		{"default off", FeatureFlag{Key: "beta"}, in, false, false},
		{"default on", FeatureFlag{Key: "beta", Enabled: true}, out, true, true},
		{"inside the rollout", FeatureFlag{Key: "beta", RolloutPercent: 50}, in, true, true},
		{"outside the rollout", FeatureFlag{Key: "beta", RolloutPercent: 50}, out, false, false},
		{"outside the rollout, default on", FeatureFlag{Key: "beta", Enabled: true, RolloutPercent: 50}, out, true, true},
		{"override on beats the default", FeatureFlag{Key: "beta", OrgOverrides: []FeatureOverride{{"org1", true}}}, out, true, false},
		{"override off beats the rollout", FeatureFlag{Key: "beta", RolloutPercent: 100, OrgOverrides: []FeatureOverride{{"org1", false}}}, in, false, true},
		{"override off beats the default", FeatureFlag{Key: "beta", Enabled: true, OrgOverrides: []FeatureOverride{{"org2", true}, {"org1", false}}}, in, false, true},
	}
	for _, c := range cases {
		if got := c.flag.EnabledFor(c.user, "org1"); got != c.want {
			t.Errorf("%s: EnabledFor(org1) = %v, want %v", c.name, got, c.want)
		}
		if got := c.flag.EnabledFor(c.user, "org3"); got != c.wantOff {
			t.Errorf("%s: EnabledFor(org3) = %v, want %v", c.name, got, c.wantOff)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestRolloutIsStableAndProportional: a user's place never changes, 0% and
// 100% are none and all, a rollout reaches about its share of users, raising
// it only adds users, and flags reach different users.
func TestRolloutIsStableAndProportional(t *testing.T) {
	t.Parallel()
	const users = 1000
	reached := func(key string, percent int) map[string]bool {
		m := map[string]bool{}
		for i := range users {
			id := fmt.Sprintf("u%04d", i)
			if InRollout(key, id, percent) {
				m[id] = true
			}
		}
		return m
	}
	if n := len(reached("beta", 0)); n != 0 {
		t.Errorf("0%% reaches %d users", n)
	}
	if n := len(reached("beta", 100)); n != users {
		t.Errorf("100%% reaches %d of %d users", n, users)
	}
	thirty := reached("beta", 30)
	if n := len(thirty); n < 200 || n > 400 {
		t.Errorf("30%% reaches %d of %d users", n, users)
	}
	again := reached("beta", 30)
	if len(again) != len(thirty) {
		t.Errorf("the same rollout reached %d users, then %d", len(thirty), len(again))
	}
	for id := range thirty {
		if !again[id] {
			t.Errorf("%s left the rollout between two reads", id)
		}
	}
	sixty := reached("beta", 60)
	for id := range thirty {
		if !sixty[id] {
			t.Errorf("%s is in the 30%% rollout but not the 60%% one", id)
		}
	}
	other := reached("gamma", 30)
	shared := 0
	for id := range thirty {
		if other[id] {
			shared++
		}
	}
	// Independent 30% samples share about 9% of users; the same sample, 30%.
	if shared > 200 {
		t.Errorf("two flags at 30%% reach %d users in common of %d and %d", shared, len(thirty), len(other))
	}
	for _, id := range []string{"a", "b", "u0001"} {
		if b := RolloutBucket("beta", id); b < 0 || b > 99 {
			t.Errorf("RolloutBucket(beta, %s) = %d", id, b)
		}
	}
}

func TestFeatureUpdateValidate(t *testing.T) {
	t.Parallel()
	pct := func(n int) *int { return &n }
	list := func(ids ...string) *[]FeatureOverride {
		l := []FeatureOverride{}
		for _, id := range ids {
			l = append(l, FeatureOverride{OrgID: id})
		}
		return &l
	}
	good := []FeatureUpdate{
		{},
		{RolloutPercent: pct(0)},
		{RolloutPercent: pct(100)},
		{OrgOverrides: list()},
		{OrgOverrides: list("a", "b")},
	}
	for _, u := range good {
		if err := u.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", u, err)
		}
	}
	bad := []struct {
		u     FeatureUpdate
		field string
	}{
		{FeatureUpdate{RolloutPercent: pct(101)}, "rollout_percent"},
		{FeatureUpdate{RolloutPercent: pct(-1)}, "rollout_percent"},
		{FeatureUpdate{OrgOverrides: list("a", "")}, "org_overrides[1].org_id"},
		{FeatureUpdate{OrgOverrides: list("a", "b", "a")}, "org_overrides[2].org_id"},
	}
	for _, c := range bad {
		err := c.u.Validate()
		e, ok := err.(*Error)
		if !ok || e.Code != EVALIDATION || e.Fields[c.field] == "" {
			t.Errorf("Validate(%+v) = %v, want a problem with %s", c.u, err, c.field)
		}
	}
	many := make([]FeatureOverride, MaxFeatureOverrides+1)
	for i := range many {
		many[i].OrgID = fmt.Sprint(i)
	}
	if err := (FeatureUpdate{OrgOverrides: &many}).Validate(); err == nil {
		t.Errorf("%d overrides accepted", len(many))
	}
}
