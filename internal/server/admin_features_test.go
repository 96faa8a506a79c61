package server

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// myFeatures is GET /users/me/features as acc.
func (a *api) myFeatures(acc *account) map[string]any {
	a.t.Helper()
	return expect(a.t, a.call("GET", "/api/v1/users/me/features", acc.Access, nil), 200).Data()
}

// featureAudits returns the audit entries of changes to feature flags,
// newest first.
func (a *api) featureAudits() []*perch.AuditEntry {
	a.t.Helper()
	entries, _, err := a.store.AuditLog(a.t.Context(), perch.AuditFilter{Action: perch.AuditAdminFeatureUpdated})
	if err != nil {
		a.t.Fatal(err)
	}
	return entries
}

func TestAdminFeatureFlags(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root")
		ada, bob := a.register("Ada"), a.register("Bob")

		list := expect(t, a.call("GET", "/api/v1/admin/features", root.Access, nil), 200).List()
		var keys []string
		for _, f := range list {
			keys = append(keys, f["key"].(string))
			// Workflows and the marketplace are on from the start (migration
			// 00019); the daily digest is not.
			if f["enabled"] != (f["key"] != "digest_email") || f["rollout_percent"] != 0.0 || fmt.Sprint(f["org_overrides"]) != "[]" || f["description"] == "" {
				t.Errorf("flag = %v", f)
			}
		}
		if fmt.Sprint(keys) != "[digest_email marketplace workflows]" {
			t.Fatalf("keys = %v", keys)
		}

		patch := func(key string, body any) *response {
			t.Helper()
			return a.call("PATCH", "/api/v1/admin/features/"+key, root.Access, body)
		}
		// On by default: every user has it, at once.
		f := expect(t, patch("digest_email", map[string]any{"enabled": true}), 200).Data()
		if f["key"] != "digest_email" || f["enabled"] != true || f["rollout_percent"] != 0.0 {
			t.Errorf("after turning on = %v", f)
		}
		if a.myFeatures(ada)["digest_email"] != true || a.myFeatures(bob)["digest_email"] != true {
			t.Error("turning the flag on did not reach the users")
		}
		// An override off for Ada's organisation beats the default.
		body := map[string]any{"org_overrides": []map[string]any{{"org_id": ada.OrgID, "enabled": false}}}
		f = expect(t, patch("digest_email", body), 200).Data()
		if ov := f["org_overrides"].([]any); len(ov) != 1 || ov[0].(map[string]any)["org_id"] != ada.OrgID || ov[0].(map[string]any)["enabled"] != false {
			t.Errorf("overrides = %v", f["org_overrides"])
		}
		if a.myFeatures(ada)["digest_email"] != false || a.myFeatures(bob)["digest_email"] != true {
			t.Errorf("with Ada's organisation off: Ada %v, Bob %v", a.myFeatures(ada)["digest_email"], a.myFeatures(bob)["digest_email"])
		}
		// A full rollout beats the default off, but not the override.
		expect(t, patch("digest_email", map[string]any{"enabled": false, "rollout_percent": 100}), 200)
		if a.myFeatures(ada)["digest_email"] != false || a.myFeatures(bob)["digest_email"] != true {
			t.Error("a full rollout with Ada's organisation off")
		}
		// Removing the overrides leaves the rollout.
		f = expect(t, patch("digest_email", map[string]any{"org_overrides": []any{}}), 200).Data()
		if fmt.Sprint(f["org_overrides"]) != "[]" || f["rollout_percent"] != 100.0 || f["enabled"] != false {
			t.Errorf("after removing the overrides = %v", f)
		}
		if a.myFeatures(ada)["digest_email"] != true {
			t.Error("the rollout does not reach Ada once her organisation's override is gone")
		}
		expect(t, patch("digest_email", map[string]any{"rollout_percent": 0}), 200)
		if a.myFeatures(ada)["digest_email"] != false || a.myFeatures(bob)["digest_email"] != false {
			t.Error("the flag is still on at 0% and off by default")
		}
		// The list shows what was changed.
		for _, f := range expect(t, a.call("GET", "/api/v1/admin/features", root.Access, nil), 200).List() {
			if f["key"] == "digest_email" && (f["enabled"] != false || f["rollout_percent"] != 0.0) {
				t.Errorf("listed = %v", f)
			}
		}

		// Each change is audited, as the admin, with what changed.
		entries := a.featureAudits()
		if len(entries) != 5 {
			t.Fatalf("%d audit entries, want 5", len(entries))
		}
		first := entries[len(entries)-1]
		if first.Actor.Type != perch.ActorAdmin || first.Actor.ID != root.ID || first.Target != (perch.AuditTarget{Type: "feature", ID: "digest_email"}) {
			t.Errorf("entry = %+v", first)
		}
		if got, _ := json.Marshal(first.Changes); string(got) != `{"enabled":{"from":false,"to":true}}` {
			t.Errorf("changes = %s", got)
		}
		if got, _ := json.Marshal(entries[len(entries)-2].Changes); string(got) != `{"org_overrides":{"from":[],"to":[{"enabled":false,"org_id":"`+ada.OrgID+`"}]}}` {
			t.Errorf("changes = %s", got)
		}
		// A change to what already is changes nothing and is not audited.
		expect(t, patch("digest_email", map[string]any{"enabled": false}), 200)
		if n := len(a.featureAudits()); n != 5 {
			t.Errorf("%d audit entries after a change of nothing", n)
		}
	})
}

func TestAdminFeatureFlagRefusals(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root")
		ada := a.register("Ada")
		patch := func(key string, body any) *response {
			t.Helper()
			return a.call("PATCH", "/api/v1/admin/features/"+key, root.Access, body)
		}
		expect(t, patch("no_such_flag", map[string]any{"enabled": true}), 404)
		for _, c := range []struct {
			body  any
			field string
		}{
			{map[string]any{"rollout_percent": 101}, "rollout_percent"},
			{map[string]any{"rollout_percent": -1}, "rollout_percent"},
			{map[string]any{"org_overrides": []map[string]any{{"org_id": ada.OrgID, "enabled": true}, {"org_id": "aaaaaaaaaaaaaaaaaaaa", "enabled": true}}}, "org_overrides[1].org_id"},
			{map[string]any{"org_overrides": []map[string]any{{"org_id": ada.OrgID, "enabled": true}, {"org_id": ada.OrgID, "enabled": false}}}, "org_overrides[1].org_id"},
			{map[string]any{"org_overrides": []map[string]any{{"enabled": true}}}, "org_overrides[0].org_id"},
		} {
			res := expect(t, patch("digest_email", c.body), 422)
			if res.Fields()[c.field] == "" {
				t.Errorf("%v: fields = %v, want %s", c.body, res.Fields(), c.field)
			}
		}
		for _, body := range []any{`{"rollout_percent": 30.5}`, `{"rollout_percent": "30"}`, `{"enabled": "yes"}`, `{"org_overrides": {}}`, `[`} {
			expect(t, patch("digest_email", body), 400)
		}
		// Nothing refused was changed, and nothing was audited.
		f := expect(t, a.call("GET", "/api/v1/admin/features", root.Access, nil), 200).List()[0]
		if f["key"] != "digest_email" || f["rollout_percent"] != 0.0 || fmt.Sprint(f["org_overrides"]) != "[]" {
			t.Errorf("after refusals = %v", f)
		}
		if n := len(a.featureAudits()); n != 0 {
			t.Errorf("%d audit entries after refusals", n)
		}
	})
}

// TestMyFeaturesFollowTheRollout: each user's answer is their stable place
// in the rollout, the same on every read.
func TestMyFeaturesFollowTheRollout(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root")
		expect(t, a.call("PATCH", "/api/v1/admin/features/marketplace", root.Access, map[string]any{"enabled": false, "rollout_percent": 50}), 200)
		for i := range 8 {
			acc := a.register(fmt.Sprint("User ", i))
			want := perch.InRollout("marketplace", acc.ID, 50)
			for range 2 {
				if got := a.myFeatures(acc)["marketplace"]; got != want {
					t.Errorf("user %d: marketplace = %v, want %v", i, got, want)
				}
			}
		}
	})
}
