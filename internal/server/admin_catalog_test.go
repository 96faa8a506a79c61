package server

import (
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func TestPlansNeedNoSignIn(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		plans := expect(t, a.call("GET", "/api/v1/billing/plans", "", nil), 200).List()
		var slugs []string
		for _, p := range plans {
			slugs = append(slugs, p["slug"].(string))
			if p["name"] == "" || p["price_monthly"] == nil || p["max_seats"] == nil {
				t.Errorf("plan lacks fields: %v", p)
			}
		}
		if strings.Join(slugs, ",") != "solo,team,enterprise" {
			t.Fatalf("slugs = %v", slugs)
		}
	})
}

func TestAnnouncements(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.register("Root") // root@example.com is listed in AdminEmails
		ada := a.register("Ada")
		expect(t, a.call("POST", "/api/v1/admin/announcements", root.Access, map[string]string{"title": "Hi", "body": "x"}), 403)
		a.verifyEmail(root) // the list counts only once the address is proven

		expect(t, a.call("GET", "/api/v1/announcements", "", nil), 401)
		expect(t, a.call("POST", "/api/v1/admin/announcements", ada.Access, map[string]string{"title": "Hi", "body": "x"}), 403)
		res := expect(t, a.call("POST", "/api/v1/admin/announcements", root.Access, map[string]string{"title": "", "body": ""}), 422)
		if res.Fields()["title"] != "is required" || res.Fields()["body"] != "is required" {
			t.Fatalf("fields = %v", res.Fields())
		}

		first := expect(t, a.call("POST", "/api/v1/admin/announcements", root.Access, map[string]string{"title": "Welcome", "body": "Hello."}), 201).Data()
		a.clock.Advance(time.Minute)
		second := expect(t, a.call("POST", "/api/v1/admin/announcements", root.Access, map[string]string{"title": "Maintenance", "body": "Sunday."}), 201).Data()
		list := expect(t, a.call("GET", "/api/v1/announcements", ada.Access, nil), 200).List()
		if len(list) != 2 || list[0]["id"] != second["id"] || list[1]["id"] != first["id"] {
			t.Fatalf("list = %v", list)
		}
		for _, f := range []string{"id", "title", "body", "created_at"} {
			if list[0][f] == nil {
				t.Errorf("announcement lacks %s", f)
			}
		}

		path := "/api/v1/admin/announcements/" + first["id"].(string)
		expect(t, a.call("PATCH", path, ada.Access, map[string]string{"title": "Hacked"}), 403)
		expect(t, a.call("PATCH", path, root.Access, map[string]string{"title": " "}), 422)
		upd := expect(t, a.call("PATCH", path, root.Access, map[string]string{"title": "Welcome aboard"}), 200).Data()
		if upd["title"] != "Welcome aboard" || upd["body"] != "Hello." {
			t.Fatalf("updated = %v", upd)
		}
		expect(t, a.call("DELETE", path, ada.Access, nil), 403)
		expect(t, a.call("DELETE", path, root.Access, nil), 204)
		expect(t, a.call("DELETE", path, root.Access, nil), 404)
		expect(t, a.call("PATCH", path, root.Access, map[string]string{"title": "x"}), 404)
	})
}

func TestAdminGrantedInTheStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		if me := expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 200).Data(); me["is_admin"] != false {
			t.Fatalf("is_admin = %v", me["is_admin"])
		}
		if err := s.GrantAdmin(t.Context(), ada.Email); err != nil {
			t.Fatal(err)
		}
		if me := expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 200).Data(); me["is_admin"] != true {
			t.Fatalf("is_admin after grant = %v", me["is_admin"])
		}
		expect(t, a.call("POST", "/api/v1/admin/announcements", ada.Access, map[string]string{"title": "Hi", "body": "x"}), 201)
	})
}
