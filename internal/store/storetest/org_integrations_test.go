package storetest_test

import (
	"context"
	"slices"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestOrgIntegrations: an organisation's integration is stored sealed as
// given, replaced by the next, told apart from other organisations', and
// removed once.
func TestOrgIntegrations(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a, b := mustOrgID(t, s, "Ada"), mustOrgID(t, s, "Eve")
		const kind = perch.IntegrationPagerDuty

		_, err := s.OrgIntegration(ctx, a, kind)
		wantCode(t, err, perch.ENOTFOUND)
		if has, err := s.HasOrgIntegration(ctx, a, kind); err != nil || has {
			t.Fatalf("HasOrgIntegration before = %v, %v", has, err)
		}
		wantCode(t, s.DeleteOrgIntegration(ctx, a, kind), perch.ENOTFOUND)

		sealed := []byte{1, 0, 255, 7}
		got, err := s.PutOrgIntegration(ctx, store.OrgIntegration{OrgID: a, Kind: kind, Sealed: sealed, FromEmail: "ops@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Sealed, sealed) || got.FromEmail != "ops@example.com" || got.UpdatedAt.IsZero() {
			t.Fatalf("stored %+v", got)
		}
		if has, err := s.HasOrgIntegration(ctx, a, kind); err != nil || !has {
			t.Fatalf("HasOrgIntegration after = %v, %v", has, err)
		}
		if has, _ := s.HasOrgIntegration(ctx, b, kind); has {
			t.Fatal("another organisation has it too")
		}

		got, err = s.PutOrgIntegration(ctx, store.OrgIntegration{OrgID: a, Kind: kind, Sealed: []byte{9}, FromEmail: "oncall@example.com"})
		if err != nil || !slices.Equal(got.Sealed, []byte{9}) || got.FromEmail != "oncall@example.com" {
			t.Fatalf("replaced: %+v, %v", got, err)
		}
		_, err = s.PutOrgIntegration(ctx, store.OrgIntegration{OrgID: a, Kind: kind})
		wantCode(t, err, perch.EBADREQUEST)

		if err := s.DeleteOrgIntegration(ctx, a, kind); err != nil {
			t.Fatal(err)
		}
		wantCode(t, s.DeleteOrgIntegration(ctx, a, kind), perch.ENOTFOUND)
		_, err = s.OrgIntegration(ctx, a, kind)
		wantCode(t, err, perch.ENOTFOUND)
	})
}
