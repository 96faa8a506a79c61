package server

import (
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func TestRegions(t *testing.T) {
	t.Parallel()
	alone := newAPI(t, storetest.New(t, store.SQLite))
	res := expect(t, alone.call("GET", "/api/v1/regions", "", nil), 200)
	if got := res.List(); len(got) != 1 || got[0]["name"] != "default" || got[0]["url"] != "http://perch.test" || got[0]["current"] != true {
		t.Fatalf("a deployment with no regions: %v", got)
	}
	if res.Header.Get("X-Perch-Region") != "" {
		t.Fatalf("X-Perch-Region %q without a region", res.Header.Get("X-Perch-Region"))
	}

	regions, err := perch.ParseRegions("us=https://perch.example.com,eu=https://eu.perch.example.com", "eu")
	if err != nil {
		t.Fatal(err)
	}
	eu := newAPI(t, storetest.New(t, store.SQLite), func(o *Options) { o.Region, o.Regions = "eu", regions })
	res = expect(t, eu.call("GET", "/api/v1/regions", "", nil), 200)
	if got := res.List(); len(got) != 2 || got[0]["current"] != false || got[1]["name"] != "eu" || got[1]["current"] != true {
		t.Fatalf("regions: %v", got)
	}
	// Every answer says where it came from, errors too.
	for _, r := range []*response{res, expect(t, eu.call("GET", "/api/v1/users/me", "", nil), 401), expect(t, eu.call("GET", "/nowhere", "", nil), 404)} {
		if r.Header.Get("X-Perch-Region") != "eu" {
			t.Fatalf("%d answer without X-Perch-Region: %v", r.Status, r.Header)
		}
	}
}
