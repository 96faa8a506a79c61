package server

import (
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/samltest"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestSAMLSettings: an owner reads the service provider's values before
// anything is stored, stores the identity provider's metadata (pasted or
// by URL), reads it back with the key the first save made, checks it,
// and removes it; the metadata endpoint follows.
func TestSAMLSettings(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		acc := e.owner.Access
		got := expect(t, e.a.call("GET", "/api/v1/org/saml", acc, nil), 200).Data()
		if got["configured"] != false || got["entity_id"] != e.entityID() || got["acs_url"] != e.base+samlACSPath ||
			got["metadata_url"] != e.entityID() || got["certificate"] != "" || got["login_url"] != e.loginURL("") {
			t.Fatalf("before any settings: %v", got)
		}
		expect(t, e.a.call("GET", samlMetadataPath+"?org_id="+e.owner.OrgID, "", nil), 404)
		res := expect(t, e.a.call("POST", "/api/v1/org/saml/test", acc, nil), 200).Data()
		if res["ok"] != false || len(res["problems"].([]any)) != 1 {
			t.Errorf("test before any settings: %v", res)
		}

		// Bad input, every problem at once.
		for _, c := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{}, "idp_metadata_xml"},
			{map[string]any{"idp_metadata_xml": "<not xml", "enabled": true}, "idp_metadata_xml"},
			{map[string]any{"idp_metadata_xml": "<EntityDescriptor/>"}, "idp_metadata_xml"},
			{map[string]any{"idp_metadata_xml": strings.Replace(testIDPMetadata(), "HTTP-Redirect", "HTTP-Artifact", -1)}, "idp_metadata_xml"},
			{map[string]any{"idp_metadata_xml": testIDPMetadata(), "idp_metadata_url": "https://idp.example.com/md"}, "idp_metadata_url"},
			{map[string]any{"idp_metadata_url": "ftp://idp.example.com/md"}, "idp_metadata_url"},
			{map[string]any{"idp_metadata_xml": testIDPMetadata(), "default_role": "owner"}, "default_role"},
			{map[string]any{"idp_metadata_xml": testIDPMetadata(), "enforce": true}, "enforce"},
			{map[string]any{"idp_metadata_xml": testIDPMetadata(), "domains": []string{"not a domain"}}, "domains"},
		} {
			res := expect(t, e.a.call("PUT", "/api/v1/org/saml", acc, c.body), 422)
			if res.Fields()[c.field] == nil {
				t.Errorf("PUT %.80v: fields %v, want %s", c.body, res.Fields(), c.field)
			}
		}
		expect(t, e.a.call("PUT", "/api/v1/org/saml", acc, `{"enabled": "yes"}`), 400)

		// By URL: fetched now, from the identity provider.
		got = expect(t, e.a.call("PUT", "/api/v1/org/saml", acc, map[string]any{
			"idp_metadata_url": e.idp.EntityID(), "enabled": true, "email_attribute": "mail"}), 200).Data()
		cert := got["certificate"].(string)
		if got["configured"] != true || got["idp_entity_id"] != e.idp.EntityID() || got["idp_sso_url"] != e.idp.HTTP.URL+"/sso" ||
			got["idp_metadata_url"] != e.idp.EntityID() || !strings.HasPrefix(cert, "-----BEGIN CERTIFICATE-----") ||
			got["idp_certificate_expires_at"] == nil || !strings.HasPrefix(got["domain_verification"].(string), perch.DomainVerificationPrefix) ||
			got["email_attribute"] != "mail" || got["default_role"] != "member" {
			t.Fatalf("stored: %v", got)
		}
		// Pasted, later: the key stays.
		got = expect(t, e.a.call("PUT", "/api/v1/org/saml", acc, map[string]any{"idp_metadata_xml": e.idp.Metadata(), "enabled": true}), 200).Data()
		if got["certificate"] != cert || got["idp_metadata_url"] != "" {
			t.Fatalf("a second save: %v", got)
		}
		audit := e.audited(perch.AuditSAMLUpdated)[0]
		if audit.Actor.ID != e.owner.ID || audit.Actor.Type != perch.ActorUser || audit.OrgID != e.owner.OrgID || audit.Changes["enabled"] != true {
			t.Errorf("audit entry %+v", audit)
		}

		md := samltest.NewBrowser(t).Get(e.base + samlMetadataPath + "?org_id=" + e.owner.OrgID)
		if md.Header.Get("Content-Type") != "application/samlmetadata+xml" || !strings.Contains(md.Body, `entityID="`+e.entityID()+`"`) ||
			!strings.Contains(md.Body, `Location="`+e.base+samlACSPath+`"`) || !strings.Contains(md.Body, `AuthnRequestsSigned="true"`) ||
			strings.Contains(md.Body, `use="encryption"`) || strings.Contains(md.Body, "HTTP-Artifact") {
			t.Errorf("metadata:\n%s", md.Body)
		}

		res = expect(t, e.a.call("POST", "/api/v1/org/saml/test", acc, nil), 200).Data()
		if res["ok"] != true || len(res["problems"].([]any)) != 0 {
			t.Errorf("test of good settings: %v", res)
		}

		expect(t, e.a.call("DELETE", "/api/v1/org/saml", acc, nil), 204)
		expect(t, e.a.call("DELETE", "/api/v1/org/saml", acc, nil), 404)
		expect(t, e.a.call("GET", samlMetadataPath+"?org_id="+e.owner.OrgID, "", nil), 404)
		if got := expect(t, e.a.call("GET", "/api/v1/org/saml", acc, nil), 200).Data(); got["configured"] != false {
			t.Errorf("after DELETE: %v", got)
		}
		e.audited(perch.AuditSAMLDeleted)
	})
}

// TestSAMLSettingsTestFindsProblems: the test lists a certificate about to
// expire, SAML switched off and an unverified domain.
func TestSAMLSettingsTestFindsProblems(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		a.clock.Advance(time.Since(a.clock.Now())) // the certificate's validity is real time
		ada := a.register("Ada")
		kp, err := samltest.GenerateKeyPairUntil("soon", a.clock.Now().Add(10*24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		md, err := samltest.Metadata(kp, "https://idp.example.com/saml")
		if err != nil {
			t.Fatal(err)
		}
		expect(t, a.call("PUT", "/api/v1/org/saml", ada.Access, map[string]any{"idp_metadata_xml": md, "domains": []string{"ada.example"}}), 200)
		res := expect(t, a.call("POST", "/api/v1/org/saml/test", ada.Access, nil), 200).Data()
		problems := strings.Join(toStrings(res["problems"]), "\n")
		for _, want := range []string{"within 30 days", "enabled is false", "ada.example is not verified"} {
			if !strings.Contains(problems, want) {
				t.Errorf("the problems lack %q:\n%s", want, problems)
			}
		}
		if res["ok"] != false {
			t.Error("ok with problems")
		}

		// Once expired, it cannot be stored at all.
		a.clock.Advance(11 * 24 * time.Hour)
		access := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": ada.Email, "password": goodPassword}), 200).Data()["access_token"].(string)
		bad := expect(t, a.call("PUT", "/api/v1/org/saml", access, map[string]any{"idp_metadata_xml": md}), 422)
		if !strings.Contains(bad.Fields()["idp_metadata_xml"].(string), "expired") {
			t.Errorf("fields %v", bad.Fields())
		}
	})
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestSAMLMetadataURLStaysOffThePrivateNetwork: without the tests' leave,
// the server refuses to fetch metadata from loopback, private and
// link-local addresses (the cloud's metadata service), in every IPv6 form
// that carries one (NAT64, 6to4, IPv4-compatible, -translated, -mapped),
// whatever the name resolves to; the refusal comes before any connection.
// Names resolve in a stub, and the loopback listener stands for the
// private network: nothing else is dialled.
func TestSAMLMetadataURLStaysOffThePrivateNetwork(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		cl := listenCounting(t)
		_, port, _ := net.SplitHostPort(cl.ln.Addr().String())
		a.srv.forwardResolver = stubResolver{"localhost": "127.0.0.1", "metadata.test": "169.254.169.254",
			"nat64.test": "64:ff9b::a9fe:a9fe", "6to4.test": "2002:a9fe:a9fe::", "intranet.test": "10.1.2.3"}
		ada := a.register("Ada")
		for _, u := range []string{
			"http://127.0.0.1:" + port + "/metadata", "http://localhost:" + port + "/metadata",
			"http://[::ffff:127.0.0.1]:" + port + "/metadata", "http://[64:ff9b::7f00:1]:" + port + "/metadata",
			"http://2130706433:" + port + "/metadata", "http://[::1]:1/metadata", "http://0.0.0.0:1/metadata",
			"http://169.254.169.254/latest/meta-data", "http://[64:ff9b::a9fe:a9fe]/latest/meta-data",
			"http://[2002:a9fe:a9fe::]/latest/meta-data", "http://[::169.254.169.254]/latest/meta-data",
			"http://[::ffff:0:a9fe:a9fe]/latest/meta-data", "http://[::ffff:a9fe:a9fe]/latest/meta-data",
			"http://metadata.test/latest/meta-data", "http://nat64.test/latest/meta-data", "http://6to4.test/latest/meta-data",
			"http://10.1.2.3/metadata", "http://intranet.test/metadata", "http://100.100.100.200/metadata",
		} {
			res := expect(t, a.call("PUT", "/api/v1/org/saml", ada.Access, map[string]any{"idp_metadata_url": u}), 422)
			if got, _ := res.Fields()["idp_metadata_url"].(string); !strings.Contains(got, "not a public address") {
				t.Errorf("%s: %q", u, got)
			}
		}
		if n := cl.n.Load(); n != 0 {
			t.Errorf("the loopback listener got %d connections, want 0", n)
		}
	})
}

// TestSAMLMetadataLoopbackAllowsLoopbackAlone: the tests' leave
// (Options.SAMLMetadataLoopback) reaches the identity provider on loopback,
// by address or by a name that resolves there, and nothing more: a NAT64
// or 6to4 form of a loopback or metadata address is still refused.
func TestSAMLMetadataLoopbackAllowsLoopbackAlone(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		e.a.srv.forwardResolver = stubResolver{"idp.test": "127.0.0.1", "metadata.test": "169.254.169.254"}
		u, err := url.Parse(e.idp.EntityID())
		if err != nil {
			t.Fatal(err)
		}
		for _, host := range []string{"127.0.0.1", "idp.test", "[::ffff:127.0.0.1]"} {
			got := expect(t, e.a.call("PUT", "/api/v1/org/saml", e.owner.Access,
				map[string]any{"idp_metadata_url": "http://" + host + ":" + u.Port() + u.Path}), 200).Data()
			if got["idp_entity_id"] != e.idp.EntityID() {
				t.Errorf("from %s: %v", host, got)
			}
		}
		for _, host := range []string{"[64:ff9b::7f00:1]", "[2002:7f00:1::]", "[::127.0.0.1]", "metadata.test", "[64:ff9b::a9fe:a9fe]"} {
			res := expect(t, e.a.call("PUT", "/api/v1/org/saml", e.owner.Access,
				map[string]any{"idp_metadata_url": "http://" + host + ":" + u.Port() + u.Path}), 422)
			if got, _ := res.Fields()["idp_metadata_url"].(string); !strings.Contains(got, "not a public address") {
				t.Errorf("%s: %q", host, got)
			}
		}
	})
}

// TestSAMLSettingsNeedASecretKey: without a key to seal the service
// provider key with, storing is 503, naming the setting.
func TestSAMLSettingsNeedASecretKey(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, func(o *Options) { o.Secrets = nil })
		ada := a.register("Ada")
		res := expect(t, a.call("PUT", "/api/v1/org/saml", ada.Access, map[string]any{"idp_metadata_xml": testIDPMetadata()}), 503)
		if !strings.Contains(res.ErrorMessage(), "PERCH_SECRET_KEY") {
			t.Errorf("message %q", res.ErrorMessage())
		}
	})
}

// TestSAMLAdminSettings: platform admins have the owners' operations for
// any organisation, with domains verified on their word; an unknown
// organisation is 404 everywhere.
func TestSAMLAdminSettings(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		root := e.a.platformAdmin("Root")
		eve := e.a.register("Eve")
		path := "/api/v1/admin/orgs/" + e.owner.OrgID + "/saml"
		body := map[string]any{"idp_metadata_xml": testIDPMetadata(), "enabled": true, "domains": []string{"Olive.Example"}}
		got := expect(t, e.a.call("PUT", path, root.Access, body), 200).Data()
		ds := got["domains"].([]any)
		if len(ds) != 1 || ds[0].(map[string]any)["domain"] != "olive.example" || ds[0].(map[string]any)["verified"] != true {
			t.Fatalf("domains %v", ds)
		}
		audit := e.audited(perch.AuditSAMLUpdated)[0]
		if audit.Actor.Type != perch.ActorAdmin || audit.OrgID != e.owner.OrgID {
			t.Errorf("audit entry %+v", audit)
		}
		expect(t, e.a.call("GET", path, root.Access, nil), 200)
		expect(t, e.a.call("POST", path+"/test", root.Access, nil), 200)

		// Another organisation cannot have the domain verified too.
		other := "/api/v1/admin/orgs/" + eve.OrgID + "/saml"
		expect(t, e.a.call("PUT", other, root.Access, body), 409)

		nobody := "/api/v1/admin/orgs/" + strings.Repeat("a", 20) + "/saml"
		expect(t, e.a.call("GET", nobody, root.Access, nil), 404)
		expect(t, e.a.call("PUT", nobody, root.Access, body), 404)
		expect(t, e.a.call("DELETE", nobody, root.Access, nil), 404)
		expect(t, e.a.call("POST", nobody+"/test", root.Access, nil), 404)
		expect(t, e.a.call("POST", nobody+"/scim-token", root.Access, nil), 404)
		expect(t, e.a.call("PUT", path, root.Access, map[string]any{"idp_metadata_xml": "<bad"}), 422)

		expect(t, e.a.call("DELETE", path, root.Access, nil), 204)
	})
}

// TestSCIMToken: the token is answered once, stored as a hash that finds
// the organisation, and a new one replaces it at once.
func TestSCIMToken(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		root := a.platformAdmin("Root")
		first := expect(t, a.call("POST", "/api/v1/org/saml/scim-token", ada.Access, nil), 201).Data()["token"].(string)
		if !strings.HasPrefix(first, perch.SCIMTokenPrefix) {
			t.Fatalf("token %q", first)
		}
		if org, err := s.SCIMTokenOrg(t.Context(), auth.HashToken(first)); err != nil || org != ada.OrgID {
			t.Fatalf("SCIMTokenOrg = %q, %v", org, err)
		}
		second := expect(t, a.call("POST", "/api/v1/admin/orgs/"+ada.OrgID+"/saml/scim-token", root.Access, nil), 201).Data()["token"].(string)
		if _, err := s.SCIMTokenOrg(t.Context(), auth.HashToken(first)); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Fatalf("the first token still works: %v", err)
		}
		got := expect(t, a.call("GET", "/api/v1/org/saml", ada.Access, nil), 200)
		if strings.Contains(got.Raw, second) || got.Data()["scim_token"].(map[string]any)["token_prefix"] != auth.DisplayPrefix(second) {
			t.Errorf("GET shows %v", got.Data()["scim_token"])
		}
		entries, _, err := s.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditSCIMTokenCreated, Page: perch.Page{Limit: 10}})
		if err != nil || len(entries) != 2 || strings.Contains(entries[0].Changes["token_prefix"].(string), second[len(auth.DisplayPrefix(second)):]) {
			t.Errorf("audit %v, %v", entries, err)
		}
	})
}

// TestSAMLDomainsAndDiscovery: an owner's domain is verified by its DNS
// TXT record (a stub resolver here), and then discovery by address finds
// the organisation; by slug it is found at once; anything else is 404.
func TestSAMLDomainsAndDiscovery(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		e := newSAMLEnv(t, s)
		eve := e.a.register("Eve")
		acc := e.owner.Access
		expect(t, e.a.call("POST", "/api/v1/org/saml/domains/verify", acc, nil), 404)
		got := e.configure(map[string]any{"domains": []string{"olive.example"}})
		record := got["domain_verification"].(string)
		if got["domains"].([]any)[0].(map[string]any)["verified"] != false {
			t.Fatalf("verified without a record: %v", got["domains"])
		}
		discover := func(body map[string]string) *response {
			return e.a.call("POST", "/api/v1/auth/saml/discover", "", body)
		}
		expect(t, discover(map[string]string{"email": "someone@olive.example"}), 404)

		checks := expect(t, e.a.call("POST", "/api/v1/org/saml/domains/verify", acc, nil), 200).List()
		if len(checks) != 1 || checks[0]["verified"] != false || !strings.Contains(checks[0]["problem"].(string), "could not be read") {
			t.Fatalf("checks %v", checks)
		}
		e.setTXT("olive.example", "v=spf1 -all", "perch-domain-verification=wrong")
		checks = expect(t, e.a.call("POST", "/api/v1/org/saml/domains/verify", acc, nil), 200).List()
		if checks[0]["verified"] != false || !strings.Contains(checks[0]["problem"].(string), "No TXT record") {
			t.Fatalf("checks %v", checks)
		}
		e.setTXT("olive.example", "v=spf1 -all", record)
		checks = expect(t, e.a.call("POST", "/api/v1/org/saml/domains/verify", acc, nil), 200).List()
		if checks[0]["verified"] != true || checks[0]["problem"] != "" {
			t.Fatalf("checks %v", checks)
		}
		e.audited(perch.AuditSAMLDomainVerified)

		found := expect(t, discover(map[string]string{"email": "Someone@Olive.Example", "redirect": "/org"}), 200).Data()
		if found["login_url"] != e.loginURL("&redirect="+url.QueryEscape("/org")) {
			t.Errorf("login_url %v", found["login_url"])
		}
		org, err := s.Org(t.Context(), e.owner.OrgID)
		if err != nil {
			t.Fatal(err)
		}
		if found := expect(t, discover(map[string]string{"org": org.Slug}), 200).Data(); found["login_url"] != e.loginURL("") {
			t.Errorf("by slug: %v", found)
		}
		for _, body := range []map[string]string{{"email": "someone@elsewhere.example"}, {"org": "nobody"}} {
			if res := expect(t, discover(body), 404); !strings.Contains(res.ErrorMessage(), "No single sign-on") {
				t.Errorf("%v: %q", body, res.ErrorMessage())
			}
		}
		expect(t, discover(map[string]string{}), 422)
		expect(t, discover(map[string]string{"email": "not an address"}), 422)

		// Another organisation may list the domain but never verify it.
		eveBody := map[string]any{"idp_metadata_xml": testIDPMetadata(), "enabled": true, "domains": []string{"olive.example"}}
		expect(t, e.a.call("PUT", "/api/v1/org/saml", eve.Access, eveBody), 200)
		checks = expect(t, e.a.call("POST", "/api/v1/org/saml/domains/verify", eve.Access, nil), 200).List()
		if checks[0]["verified"] != false {
			t.Fatalf("verified for two organisations: %v", checks)
		}
		// Off, the organisation is not found.
		e.configure(map[string]any{"enabled": false})
		expect(t, discover(map[string]string{"email": "someone@olive.example"}), 404)
	})
}

// TestSAMLMetadataIsBoundedBeforeItIsParsed: an owner's metadata is read
// again at every sign-in to the organisation (the start of which anyone may
// ask for), so it is held to limits as a posted response is; real metadata
// is far inside them.
func TestSAMLMetadataIsBoundedBeforeItIsParsed(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	owner := a.register("Olive Owner")
	good := testIDPMetadata()
	end := strings.LastIndex(good, "</")
	for name, tc := range map[string]struct{ xml, want string }{
		"6,000 extra elements": {good[:end] + strings.Repeat("<x/>", 6000) + good[end:], "holds more than 5000 elements"},
		"40 deep":              {good[:end] + strings.Repeat("<x>", 40) + strings.Repeat("</x>", 40) + good[end:], "nests elements more than 32 deep"},
		"a document type":      {`<!DOCTYPE x [<!ENTITY a "b">]>` + good, "document type declaration"},
	} {
		t.Run(name, func(t *testing.T) {
			res := expect(t, a.call("PUT", "/api/v1/org/saml", owner.Access, map[string]any{"idp_metadata_xml": tc.xml, "enabled": true}), 422)
			if got, _ := res.Fields()["idp_metadata_xml"].(string); !strings.Contains(got, tc.want) {
				t.Fatalf("idp_metadata_xml: %q, want %q", got, tc.want)
			}
		})
	}
	expect(t, a.call("PUT", "/api/v1/org/saml", owner.Access, map[string]any{"idp_metadata_xml": good, "enabled": true}), 200)
}
