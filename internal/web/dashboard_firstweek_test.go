package web_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// The forms that set a password say the domain's rule, not one of their own.
func TestDashboardPasswordFormsSayTheDomainsRule(t *testing.T) {
	a := newSite(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.ts)
	rule := []string{
		`minlength="` + strconv.Itoa(perch.MinPasswordLen) + `"`,
		`maxlength="` + strconv.Itoa(perch.MaxPasswordLen) + `"`,
		"At least " + strconv.Itoa(perch.MinPasswordLen) + " characters (at most " + strconv.Itoa(perch.MaxPasswordLen) + ").",
	}
	b.get("/signup").expect(t, 200, "").contains(t, rule...)
	b.get("/reset-password?token=whatever").contains(t, rule...)
	signUpInBrowser(t, b, "Ada")
	b.get("/profile").expect(t, 200, "").contains(t, rule...)

	// No template keeps a rule of its own: every new-password field has
	// its lengths from passwordRule, and no text counts characters.
	newPassword := regexp.MustCompile(`<input[^>]*new-password[^>]*>`)
	ownCount := regexp.MustCompile(`(?i)at least \d|\d+ characters`)
	filepath.WalkDir("templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, _ := os.ReadFile(path)
		for _, in := range newPassword.FindAll(raw, -1) {
			if !regexp.MustCompile(`minlength="\{\{\(passwordRule\)\.Min\}\}" maxlength="\{\{\(passwordRule\)\.Max\}\}"`).Match(in) {
				t.Errorf("%s: %s: take the lengths from passwordRule", path, in)
			}
		}
		if m := ownCount.Find(raw); m != nil {
			t.Errorf("%s: %q: say the rule with passwordRule", path, m)
		}
		return nil
	})
}
