package storetest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func TestFeatureFlagsListAndUpdate(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")

		flags, err := s.FeatureFlags(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, f := range flags {
			keys = append(keys, f.Key)
			// Workflows and the marketplace are built and on (migration
			// 00019); the daily digest is not.
			if on := f.Key != "digest_email"; f.Enabled != on || f.RolloutPercent != 0 || f.OrgOverrides == nil || len(f.OrgOverrides) != 0 || f.Description == "" {
				t.Errorf("flag %+v is not enabled=%v, unrolled and without overrides", f, on)
			}
		}
		if !slices.Equal(keys, []string{"digest_email", "marketplace", "workflows"}) {
			t.Fatalf("keys = %v", keys)
		}

		on, pct := true, 40
		overrides := []perch.FeatureOverride{{OrgID: bob.OrgID, Enabled: false}, {OrgID: ada.OrgID, Enabled: true}}
		before, after, err := s.UpdateFeatureFlag(ctx, "digest_email", perch.FeatureUpdate{Enabled: &on, RolloutPercent: &pct, OrgOverrides: &overrides})
		if err != nil {
			t.Fatal(err)
		}
		if before.Enabled || before.RolloutPercent != 0 || len(before.OrgOverrides) != 0 {
			t.Errorf("before = %+v", before)
		}
		if !after.Enabled || after.RolloutPercent != 40 || len(after.OrgOverrides) != 2 {
			t.Fatalf("after = %+v", after)
		}
		got, err := s.FeatureFlag(ctx, "digest_email")
		if err != nil || fmt.Sprint(got) != fmt.Sprint(after) {
			t.Errorf("FeatureFlag = %+v, %v; want %+v", got, err, after)
		}
		if m, _ := s.Features(ctx, bob.ID, bob.OrgID); m["digest_email"] {
			t.Error("the override off does not reach Bob's organisation")
		}
		if m, _ := s.Features(ctx, ada.ID, ada.OrgID); !m["digest_email"] || !m["workflows"] {
			t.Errorf("Ada's features = %v", m)
		}

		// Only what is named changes; an empty list removes every override.
		off, none := false, []perch.FeatureOverride{}
		if _, after, err = s.UpdateFeatureFlag(ctx, "digest_email", perch.FeatureUpdate{Enabled: &off}); err != nil {
			t.Fatal(err)
		}
		if after.Enabled || after.RolloutPercent != 40 || len(after.OrgOverrides) != 2 {
			t.Errorf("after turning off = %+v", after)
		}
		if _, after, err = s.UpdateFeatureFlag(ctx, "digest_email", perch.FeatureUpdate{OrgOverrides: &none}); err != nil {
			t.Fatal(err)
		}
		if after.RolloutPercent != 40 || after.OrgOverrides == nil || len(after.OrgOverrides) != 0 {
			t.Errorf("after clearing the overrides = %+v", after)
		}

		_, _, err = s.UpdateFeatureFlag(ctx, "no_such_flag", perch.FeatureUpdate{Enabled: &on})
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.FeatureFlag(ctx, "no_such_flag")
		wantCode(t, err, perch.ENOTFOUND)

		// An unknown organisation refuses the whole change, naming it.
		ten := 10
		bad := []perch.FeatureOverride{{OrgID: ada.OrgID, Enabled: true}, {OrgID: "aaaaaaaaaaaaaaaaaaaa", Enabled: true}}
		_, _, err = s.UpdateFeatureFlag(ctx, "digest_email", perch.FeatureUpdate{RolloutPercent: &ten, OrgOverrides: &bad})
		wantCode(t, err, perch.EVALIDATION)
		if e := err.(*perch.Error); len(e.Fields) != 1 || e.Fields["org_overrides[1].org_id"] == "" {
			t.Errorf("fields = %v", e.Fields)
		}
		if got, _ := s.FeatureFlag(ctx, "digest_email"); got.RolloutPercent != 40 || len(got.OrgOverrides) != 0 {
			t.Errorf("a refused change was partly made: %+v", got)
		}
	})
}

// TestFeaturesFollowTheRollout: the store answers each user by their place
// in the rollout.
func TestFeaturesFollowTheRollout(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		pct := 50
		off := false
		if _, _, err := s.UpdateFeatureFlag(ctx, "marketplace", perch.FeatureUpdate{Enabled: &off, RolloutPercent: &pct}); err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			u := mustCreateUser(t, s, fmt.Sprint("User ", i), fmt.Sprintf("user%d@example.com", i))
			m, err := s.Features(ctx, u.ID, u.OrgID)
			if err != nil {
				t.Fatal(err)
			}
			if want := perch.InRollout("marketplace", u.ID, 50); m["marketplace"] != want {
				t.Errorf("user %d: marketplace = %v, want %v", i, m["marketplace"], want)
			}
		}
	})
}
