package storetest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/mail"
	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func mustBox(t *testing.T) *secrets.Box {
	t.Helper()
	box, err := secrets.New(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// opened is every message of the outbox, opened with box.
func opened(t *testing.T, s *store.Store, box *secrets.Box) []mail.Message {
	t.Helper()
	kept, err := s.Outbox(context.Background(), 50)
	if err != nil {
		t.Fatal(err)
	}
	var out []mail.Message
	for _, k := range kept {
		m, err := mail.Open(k, box)
		if err != nil {
			t.Fatalf("open the message to %s: %v", k.To, err)
		}
		out = append(out, m)
	}
	return out
}

// withoutUnsubscribe is m as the outbox gives it back: the one-click
// unsubscribe header's URL is for sending only, and is not kept.
func withoutUnsubscribe(m mail.Message) mail.Message {
	m.Unsubscribe = ""
	return m
}

// Reset, verification and invitation links kept in the outbox are
// credentials: read straight from the database, no row holds a link's
// token or a body in the clear, while the operator, with the server's key,
// reads every message back whole. Without a key the envelope alone is kept.
func TestOutboxKeepsNoLinkInTheClear(t *testing.T) {
	t.Parallel()
	storetest.RunWithSQL(t, func(t *testing.T, s *store.Store, db *sql.DB) {
		ctx := context.Background()
		clock := storetest.NewClock()
		s.Now = clock.Now
		box := mustBox(t)
		outbox := mail.NewOutbox(s, box, slog.New(slog.NewTextHandler(io.Discard, nil)))
		msgs := []mail.Message{
			mail.VerifyEmail("ada@example.com", "Ada", "https://perch.example/verify-email?token=pem_VERIFYSECRET"),
			mail.PasswordReset("ada@example.com", "Ada", "https://perch.example/reset-password?token=pem_RESETSECRET"),
			mail.Invitation("bob@example.com", "Ada", "Analytical Engines", "admin", "https://perch.example/invitations/accept?token=inv_INVITESECRET"),
			mail.Newsletter("cy@example.com", "News", "A body only subscribers read", "https://perch.example/unsubscribe?u=1&sig=UNSUBSIG", "https://perch.example/u/UNSUBSIG"),
		}
		for _, m := range msgs {
			if err := outbox.Send(ctx, m); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Second)
		}
		rows := storetest.Table(t, db, "mail_outbox")
		for _, secret := range []string{"VERIFYSECRET", "RESETSECRET", "INVITESECRET", "UNSUBSIG", "subscribers read"} {
			if strings.Contains(rows, secret) {
				t.Errorf("the outbox holds %q in the clear", secret)
			}
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM mail_outbox`).Scan(&n); err != nil || n != len(msgs) || !strings.Contains(rows, "bob@example.com") {
			t.Fatalf("the outbox holds %d messages (%v), want %d:\n%s", n, err, len(msgs), rows)
		}
		got := opened(t, s, box)
		for i, m := range msgs {
			if want := withoutUnsubscribe(m); got[len(got)-1-i] != want {
				t.Errorf("message %d read back as %+v, want %+v", i, got[len(got)-1-i], want)
			}
		}

		// No key: the envelope is kept, the link and bodies are not.
		noKey := mail.NewOutbox(s, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err := noKey.Send(ctx, mail.PasswordReset("eve@example.com", "Eve", "https://perch.example/reset-password?token=pem_NOKEYSECRET")); err != nil {
			t.Fatal(err)
		}
		if rows := storetest.Table(t, db, "mail_outbox"); strings.Contains(rows, "NOKEYSECRET") || !strings.Contains(rows, "eve@example.com") {
			t.Errorf("without a key the outbox holds:\n%s", rows)
		}
		kept, err := s.Outbox(ctx, 1)
		if err != nil || len(kept) != 1 || !kept[0].Withheld || kept[0].To != "eve@example.com" {
			t.Fatalf("Outbox = %+v, %v; want Eve's message, withheld", kept, err)
		}
		if m, err := mail.Open(kept[0], box); !errors.Is(err, mail.ErrWithheld) || m.Link != "" {
			t.Errorf("Open = %+v, %v; want mail.ErrWithheld", m, err)
		}
	})
}

// Mail whose link is a credential expires with the link: past it the
// message is no longer listed, and pruning deletes it. Mail with no such
// link (an admin's test message) is kept.
func TestOutboxExpiresWithItsLinks(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		clock := storetest.NewClock()
		s.Now = clock.Now
		box := mustBox(t)
		for _, m := range []mail.Message{
			mail.PasswordReset("ada@example.com", "Ada", "https://perch.example/r"),
			mail.VerifyEmail("ada@example.com", "Ada", "https://perch.example/v"),
			mail.EmailChange("ada@new.example.com", "Ada", "https://perch.example/c"),
			mail.Invitation("bob@example.com", "Ada", "Org", "member", "https://perch.example/i"),
			mail.TestMessage("root@example.com", "Root", "https://perch.example/"),
		} {
			if err := s.SaveMail(ctx, mail.Keep(m, box)); err != nil {
				t.Fatal(err)
			}
		}
		kinds := func() string {
			t.Helper()
			var out []string
			for _, m := range opened(t, s, box) {
				out = append(out, m.Kind)
			}
			slices.Sort(out)
			return strings.Join(out, " ")
		}
		prune := func(want int64) {
			t.Helper()
			if n, err := s.PruneOutbox(ctx); err != nil || n != want {
				t.Fatalf("PruneOutbox = %d, %v; want %d", n, err, want)
			}
		}
		all := "email_change email_test invitation password_reset verify_email"
		if got := kinds(); got != all {
			t.Fatalf("kept %q, want %q", got, all)
		}
		prune(0)
		clock.Advance(perch.PasswordResetTTL - time.Millisecond)
		if got := kinds(); got != all {
			t.Fatalf("a moment before the reset link expires: %q", got)
		}
		clock.Advance(time.Millisecond)
		if got := kinds(); got != "email_change email_test invitation verify_email" {
			t.Fatalf("once the reset link expired: %q", got)
		}
		clock.Advance(perch.VerifyEmailTTL)
		if got := kinds(); got != "email_test invitation" {
			t.Fatalf("once the verification links expired: %q", got)
		}
		prune(3)
		clock.Advance(perch.InvitationTTL)
		prune(1)
		if got := kinds(); got != "email_test" {
			t.Fatalf("once the invitation expired: %q", got)
		}
		clock.Advance(365 * 24 * time.Hour)
		prune(0)
	})
}

// TestMigration25SealsTheOutboxAndDropsOpenFlows takes a database from
// before 00025, with mail an older Perch kept in the clear and an OAuth
// flow with its verifier in the clear, up through 00025. The flow is gone;
// the mail is still read, and expires with its links as new mail does; a
// server with a key seals it at start-up (SealOutbox), after which no row
// holds a link in the clear and the key reads it back; down again, the
// sealed mail goes with the new columns (an older Perch could not open
// it).
func TestMigration25SealsTheOutboxAndDropsOpenFlows(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Backends {
		t.Run(string(dialect), func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSN(t, dialect)
			db, p := migrator(t, dialect, dsn)
			exec := func(query string, args ...any) {
				t.Helper()
				if dialect == store.Postgres {
					for n := 1; strings.Contains(query, "?"); n++ {
						query = strings.Replace(query, "?", fmt.Sprintf("$%d", n), 1)
					}
				}
				if _, err := db.ExecContext(ctx, query, args...); err != nil {
					t.Fatalf("%s: %v", query, err)
				}
			}
			if _, err := p.UpTo(ctx, 24); err != nil {
				t.Fatal(err)
			}
			now := storetest.NewClock().Now()
			old := []struct {
				kind, link string
				age        time.Duration
			}{
				{perch.EmailPasswordReset, "https://perch.example/reset-password?token=pem_OLDRESET", 2 * time.Hour}, // expired
				{perch.EmailInvitation, "https://perch.example/invitations/accept?token=inv_OLDINVITE", 24 * time.Hour},
				{perch.EmailTest, "https://perch.example/", 30 * 24 * time.Hour},
			}
			for i, o := range old {
				exec(`INSERT INTO mail_outbox (id, recipient, subject, kind, link, body_text, body_html, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
					fmt.Sprintf("m%d", i), "ada@example.com", "Subject "+o.kind, o.kind, o.link, "Text with "+o.link, "<p>HTML with "+o.link+"</p>",
					now.Add(-o.age).UnixMilli())
			}
			exec(`INSERT INTO oauth_flows (state_hash, provider, verifier, nonce, redirect, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				"hash-of-state", perch.ProviderGoogle, "CLEARVERIFIER", "CLEARNONCE", "/", now.UnixMilli(), now.Add(perch.OAuthFlowTTL).UnixMilli())

			if _, err := p.UpTo(ctx, 25); err != nil {
				t.Fatal(err)
			}
			if flows := storetest.Table(t, db, "oauth_flows"); flows != "" {
				t.Errorf("flows kept in the clear survived the migration:\n%s", flows)
			}
			s, err := store.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Now = func() time.Time { return now }
			// Read as kept, with no key needed; the expired reset is not listed.
			readable := opened(t, s, nil)
			if len(readable) != 2 || readable[0].Kind != perch.EmailInvitation || readable[0].Link != old[1].link ||
				readable[0].Text != "Text with "+old[1].link || readable[1].Kind != perch.EmailTest {
				t.Fatalf("after the migration the outbox reads %+v", readable)
			}
			if n, err := s.PruneOutbox(ctx); err != nil || n != 1 {
				t.Fatalf("PruneOutbox = %d, %v; want the expired reset", n, err)
			}

			box := mustBox(t)
			seal := func(k perch.KeptMail) []byte { return mail.Seal(k, box) }
			if n, err := s.SealOutbox(ctx, seal); err != nil || n != 2 {
				t.Fatalf("SealOutbox = %d, %v; want 2", n, err)
			}
			if n, err := s.SealOutbox(ctx, seal); err != nil || n != 0 {
				t.Fatalf("SealOutbox again = %d, %v; want 0", n, err)
			}
			if rows := storetest.Table(t, db, "mail_outbox"); strings.Contains(rows, "OLDINVITE") || strings.Contains(rows, "Text with") {
				t.Errorf("sealed, the outbox still holds:\n%s", rows)
			}
			if got := opened(t, s, box); len(got) != 2 || got[0] != readable[0] || got[1] != readable[1] {
				t.Errorf("sealed, the outbox reads %+v, want %+v", got, readable)
			}

			if _, err := p.Down(ctx); err != nil {
				t.Fatal(err)
			}
			var left int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM mail_outbox`).Scan(&left); err != nil || left != 0 {
				t.Errorf("down again, the outbox holds %d messages an older Perch cannot read (%v)", left, err)
			}
		})
	}
}
