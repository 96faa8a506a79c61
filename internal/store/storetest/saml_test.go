package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func samlConfigFor(orgID string) store.SAMLConfig {
	return store.SAMLConfig{OrgID: orgID, Enabled: true, DefaultRole: perch.RoleMember, IDPMetadataXML: "<x/>",
		IDPEntityID: "https://idp.example.com", IDPSSOURL: "https://idp.example.com/sso", IDPCertificates: "pem",
		SPKeySealed: []byte("sealed-key"), SPCertificate: "sp-pem", DomainToken: "token-" + orgID}
}

// TestSAMLConfigKeepsItsKey: the first save stores the service provider's
// key and domain token; a later save changes the settings and keeps them.
func TestSAMLConfigKeepsItsKey(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		_, err := s.SAMLConfig(ctx, ada.OrgID)
		wantCode(t, err, perch.ENOTFOUND)
		enforced, err := s.SSOEnforced(ctx, ada.OrgID)
		if err != nil || enforced {
			t.Fatalf("SSOEnforced before any settings = %v, %v", enforced, err)
		}

		c, err := s.PutSAMLConfig(ctx, samlConfigFor(ada.OrgID))
		if err != nil || string(c.SPKeySealed) != "sealed-key" || c.DomainToken != "token-"+ada.OrgID || c.Enforce {
			t.Fatalf("first save = %+v, %v", c, err)
		}
		clock.Advance(time.Minute)
		again := samlConfigFor(ada.OrgID)
		again.SPKeySealed, again.SPCertificate, again.DomainToken = []byte("another"), "another", "another"
		again.Enforce, again.IDPEntityID = true, "https://idp2.example.com"
		c, err = s.PutSAMLConfig(ctx, again)
		if err != nil || string(c.SPKeySealed) != "sealed-key" || c.SPCertificate != "sp-pem" || c.DomainToken != "token-"+ada.OrgID {
			t.Fatalf("second save replaced the key: %+v, %v", c, err)
		}
		if !c.Enforce || c.IDPEntityID != "https://idp2.example.com" || !c.UpdatedAt.After(c.CreatedAt) {
			t.Fatalf("second save did not take: %+v", c)
		}
		if enforced, err := s.SSOEnforced(ctx, ada.OrgID); err != nil || !enforced {
			t.Fatalf("SSOEnforced = %v, %v", enforced, err)
		}

		wantCode(t, s.DeleteSAMLConfig(ctx, ada.OrgID), "")
		wantCode(t, s.DeleteSAMLConfig(ctx, ada.OrgID), perch.ENOTFOUND)
	})
}

// TestSAMLDomains: a domain is verified for one organisation at most; an
// admin's list verifies at once; discovery finds verified domains of
// enabled organisations only.
func TestSAMLDomains(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		eve := mustCreateUser(t, s, "Eve", "eve@example.com")
		wantCode(t, s.SetSAMLDomains(ctx, ada.OrgID, []string{"example.com"}, false), perch.ENOTFOUND)
		for _, o := range []string{ada.OrgID, eve.OrgID} {
			if _, err := s.PutSAMLConfig(ctx, samlConfigFor(o)); err != nil {
				t.Fatal(err)
			}
		}
		// Both may claim it; neither has it verified.
		wantCode(t, s.SetSAMLDomains(ctx, ada.OrgID, []string{"example.com", "example.org"}, false), "")
		wantCode(t, s.SetSAMLDomains(ctx, eve.OrgID, []string{"example.com"}, false), "")
		_, err := s.SAMLOrgByDomain(ctx, "example.com")
		wantCode(t, err, perch.ENOTFOUND)

		wantCode(t, s.VerifySAMLDomain(ctx, ada.OrgID, "example.com"), "")
		wantCode(t, s.VerifySAMLDomain(ctx, eve.OrgID, "example.com"), perch.ECONFLICT)
		wantCode(t, s.SetSAMLDomains(ctx, eve.OrgID, []string{"example.com"}, true), perch.ECONFLICT)
		if org, err := s.SAMLOrgByDomain(ctx, "Example.COM"); err != nil || org != ada.OrgID {
			t.Fatalf("SAMLOrgByDomain = %q, %v", org, err)
		}
		ds, err := s.SAMLDomains(ctx, ada.OrgID)
		if err != nil || len(ds) != 2 || ds[0].Domain != "example.com" || !ds[0].Verified || ds[1].Verified {
			t.Fatalf("SAMLDomains = %+v, %v", ds, err)
		}

		// Re-listing keeps a verification; leaving a domain out drops it; an
		// admin's list verifies.
		wantCode(t, s.SetSAMLDomains(ctx, ada.OrgID, []string{"example.com"}, false), "")
		wantCode(t, s.SetSAMLDomains(ctx, eve.OrgID, []string{"eve.example"}, true), "")
		if ds, _ := s.SAMLDomains(ctx, ada.OrgID); len(ds) != 1 || !ds[0].Verified {
			t.Fatalf("after re-listing: %+v", ds)
		}
		if ds, _ := s.SAMLDomains(ctx, eve.OrgID); len(ds) != 1 || ds[0].Domain != "eve.example" || !ds[0].Verified {
			t.Fatalf("admin's list: %+v", ds)
		}

		// Discovery by slug or domain wants SAML enabled.
		org, err := s.Org(ctx, ada.OrgID)
		if err != nil {
			t.Fatal(err)
		}
		if id, err := s.SAMLOrgBySlug(ctx, org.Slug); err != nil || id != ada.OrgID {
			t.Fatalf("SAMLOrgBySlug = %q, %v", id, err)
		}
		off := samlConfigFor(ada.OrgID)
		off.Enabled = false
		if _, err := s.PutSAMLConfig(ctx, off); err != nil {
			t.Fatal(err)
		}
		_, err = s.SAMLOrgBySlug(ctx, org.Slug)
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.SAMLOrgByDomain(ctx, "example.com")
		wantCode(t, err, perch.ENOTFOUND)

		// Deleting the settings frees the domain.
		wantCode(t, s.DeleteSAMLConfig(ctx, ada.OrgID), "")
		wantCode(t, s.SetSAMLDomains(ctx, eve.OrgID, []string{"example.com"}, true), "")
	})
}

// TestSAMLRequestsAndReplays: a started sign-in is found by its RelayState,
// with the hash of its browser's secret, until it is consumed (once) or
// expires; an assertion is accepted once until pruned.
func TestSAMLRequestsAndReplays(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		clock := storetest.NewClock()
		s.Now = clock.Now
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		eve := mustCreateUser(t, s, "Eve", "eve@example.com")
		req := store.SAMLRequest{ID: "id-1", OrgID: ada.OrgID, RelayState: "relay-1", Target: "/org", BrowserHash: "browser-hash-1",
			ExpiresAt: clock.Now().Add(10 * time.Minute)}
		wantCode(t, s.CreateSAMLRequest(ctx, req), "")
		got, err := s.SAMLRequestByRelay(ctx, "relay-1")
		if err != nil || got.ID != "id-1" || got.OrgID != ada.OrgID || got.Target != "/org" || got.BrowserHash != "browser-hash-1" {
			t.Fatalf("SAMLRequestByRelay = %+v, %v", got, err)
		}
		wantCode(t, s.ConsumeSAMLRequest(ctx, eve.OrgID, "id-1"), perch.ENOTFOUND)
		wantCode(t, s.ConsumeSAMLRequest(ctx, ada.OrgID, "id-1"), "")
		wantCode(t, s.ConsumeSAMLRequest(ctx, ada.OrgID, "id-1"), perch.ENOTFOUND)

		wantCode(t, s.CreateSAMLRequest(ctx, store.SAMLRequest{ID: "id-2", OrgID: ada.OrgID, RelayState: "relay-2", Target: "/",
			ExpiresAt: clock.Now().Add(time.Minute)}), "")
		wantCode(t, s.MarkSAMLAssertionUsed(ctx, ada.OrgID, "a-1", clock.Now().Add(time.Minute)), "")
		wantCode(t, s.MarkSAMLAssertionUsed(ctx, ada.OrgID, "a-1", clock.Now().Add(time.Minute)), perch.ECONFLICT)
		wantCode(t, s.MarkSAMLAssertionUsed(ctx, eve.OrgID, "a-1", clock.Now().Add(time.Minute)), "")

		clock.Advance(2 * time.Minute)
		_, err = s.SAMLRequestByRelay(ctx, "relay-2")
		wantCode(t, err, perch.ENOTFOUND)
		wantCode(t, s.ConsumeSAMLRequest(ctx, ada.OrgID, "id-2"), perch.ENOTFOUND)
		if n, err := s.PruneSAML(ctx); err != nil || n != 3 {
			t.Fatalf("PruneSAML = %d, %v; want the request and two assertions", n, err)
		}
		wantCode(t, s.MarkSAMLAssertionUsed(ctx, ada.OrgID, "a-1", clock.Now().Add(time.Minute)), "")
	})
}

// TestSCIMTokens: a new token replaces the old one at once; lookups go by
// hash.
func TestSCIMTokens(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		_, err := s.SCIMToken(ctx, ada.OrgID)
		wantCode(t, err, perch.ENOTFOUND)
		if _, err := s.SetSCIMToken(ctx, ada.OrgID, "hash-1", "scim_AAAA"); err != nil {
			t.Fatal(err)
		}
		if org, err := s.SCIMTokenOrg(ctx, "hash-1"); err != nil || org != ada.OrgID {
			t.Fatalf("SCIMTokenOrg = %q, %v", org, err)
		}
		if _, err := s.SetSCIMToken(ctx, ada.OrgID, "hash-2", "scim_BBBB"); err != nil {
			t.Fatal(err)
		}
		_, err = s.SCIMTokenOrg(ctx, "hash-1")
		wantCode(t, err, perch.ENOTFOUND)
		if tok, err := s.SCIMToken(ctx, ada.OrgID); err != nil || tok.TokenPrefix != "scim_BBBB" {
			t.Fatalf("SCIMToken = %+v, %v", tok, err)
		}
	})
}

// TestCreateSSOUser: an account made at sign-in is passwordless, in the
// organisation with the role, and counts against the seats; its address is
// the organisation's assertion, not a proven mailbox.
func TestCreateSSOUser(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		u, err := s.CreateSSOUser(ctx, ada.OrgID, "bob@example.com", "Bob", perch.RoleMember)
		if err != nil || u.EmailVerified || u.OrgID != ada.OrgID || u.OrgRole != perch.RoleMember {
			t.Fatalf("CreateSSOUser = %+v, %v", u, err)
		}
		if got, hash, err := s.UserCredentials(ctx, "BOB@example.com"); err != nil || got.ID != u.ID || hash != "" || got.EmailVerified {
			t.Fatalf("UserCredentials = %+v, %q, %v", got, hash, err)
		}
		if got, err := s.AdminUser(ctx, u.ID); err != nil || got.EmailVerified || got.EmailAssertedBy != ada.OrgID {
			t.Fatalf("AdminUser = %+v, %v; want the address asserted by %s, not proven", got, err, ada.OrgID)
		}
		_, err = s.CreateSSOUser(ctx, ada.OrgID, "bob@example.com", "Bob", perch.RoleMember)
		wantCode(t, err, perch.ECONFLICT)

		// The solo plan has one seat, which its owner holds.
		eve := mustCreateUser(t, s, "Eve", "eve@example.com")
		if _, _, err := s.UpdateOrgAsAdmin(ctx, eve.OrgID, perch.AdminOrgUpdate{Plan: new("solo")}); err != nil {
			t.Fatal(err)
		}
		_, err = s.CreateSSOUser(ctx, eve.OrgID, "carol@example.com", "Carol", perch.RoleMember)
		wantCode(t, err, perch.ECONFLICT)
	})
}
