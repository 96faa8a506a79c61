package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/perch-dev/perch/client"
)

// TestRegions runs two deployments, us and eu, each with its own database:
// us lists both, says which it is on every answer, offers eu on its sign-in
// page, and perch login --region eu signs in to eu's server.
func TestRegions(t *testing.T) {
	t.Parallel()
	eu := startServer(t, map[string]string{"PERCH_REGION": "eu", "PERCH_RATE_LIMIT_AUTH": "1000/1m"})
	us := startServer(t, map[string]string{
		"PERCH_REGION": "us", "PERCH_REGIONS": "us=http://perch.example.com,eu=" + eu, "PERCH_RATE_LIMIT_AUTH": "1000/1m",
	})

	regions, err := client.New(us).Regions(t.Context())
	if err != nil || len(regions) != 2 || regions[0].Name != "us" || !regions[0].Current || regions[1].URL != eu || regions[1].Current {
		t.Fatalf("us's regions = %+v, %v", regions, err)
	}
	if rs, err := client.New(eu).Regions(t.Context()); err != nil || len(rs) != 1 || rs[0].Name != "eu" || !rs[0].Current {
		t.Fatalf("a deployment with no list names itself: %+v, %v", rs, err)
	}

	res, err := http.Get(us + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.Header.Get("X-Perch-Region") != "us" || !strings.Contains(string(page), `href="`+eu+`/signin"`) {
		t.Fatalf("us's sign-in page: X-Perch-Region %q, offers eu: %v", res.Header.Get("X-Perch-Region"), strings.Contains(string(page), eu))
	}

	// An account in eu, signed in to from the us address by region.
	u := newTestUser(t, eu, "Ada")
	_, pat, err := u.api.CreateAPIToken(t.Context(), "cli")
	if err != nil {
		t.Fatal(err)
	}
	c, stdout, _ := testCLI(t, t.TempDir(), nil)
	if err := dispatch(t.Context(), "login", []string{"--server", us, "--region", "eu", "--token", pat}, c); err != nil {
		t.Fatal(err)
	}
	if want := "Signed in to " + eu + " as ada@example.com.\nThis token may do everything your account may do; it does not expire.\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	err = dispatch(t.Context(), "login", []string{"--server", us, "--region", "ap", "--token", pat}, c)
	if err == nil || !strings.Contains(err.Error(), `no region "ap"`) || !strings.Contains(err.Error(), "us, eu") {
		t.Fatalf("an unknown region: %v", err)
	}
}
