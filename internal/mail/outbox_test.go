package mail

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/secrets"
)

// memStore is an in-memory OutboxStore.
type memStore struct {
	mu   sync.Mutex
	msgs []perch.KeptMail
	err  error // returned by SaveMail when set
}

func (s *memStore) SaveMail(_ context.Context, k perch.KeptMail) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.msgs = append(s.msgs, k)
	return nil
}

func (s *memStore) Messages() []perch.KeptMail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]perch.KeptMail(nil), s.msgs...)
}

func mustBox(t *testing.T) *secrets.Box {
	t.Helper()
	box, err := secrets.New(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// jsonLogger returns a logger whose records land in buf as JSON lines.
func jsonLogger() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewJSONHandler(&buf, nil)), &buf
}

func logRecords(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for line := range strings.Lines(buf.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// The outbox keeps who a message is for and what it is about in the
// clear, and its link and bodies sealed: the store is given nothing that
// holds the link, and the key opens the message sent, whole.
func TestOutboxStoresSealedAndLogs(t *testing.T) {
	t.Parallel()
	store := &memStore{}
	box := mustBox(t)
	logger, buf := jsonLogger()
	m := PasswordReset("ada@example.org", "Ada", "https://perch.example.com/reset/tok")

	if err := NewOutbox(store, box, logger).Send(t.Context(), m); err != nil {
		t.Fatalf("Send: %v", err)
	}

	got := store.Messages()
	if len(got) != 1 {
		t.Fatalf("stored %d messages, want 1", len(got))
	}
	k := got[0]
	if k.To != m.To || k.Subject != m.Subject || k.Kind != m.Kind || k.Link != "" || k.Text != "" || k.HTML != "" || k.Withheld || k.Sealed == nil {
		t.Errorf("stored %+v, want the envelope in the clear and the rest sealed", k)
	}
	if strings.Contains(fmt.Sprintf("%+v", k), "reset/tok") {
		t.Errorf("what the store got holds the link: %+v", k)
	}
	if opened, err := Open(k, box); err != nil || opened != (Message{To: m.To, Subject: m.Subject, Kind: m.Kind, Link: m.Link, Text: m.Text, HTML: m.HTML}) {
		t.Errorf("Open = %+v, %v; want the message sent", opened, err)
	}
	recs := logRecords(t, buf)
	if len(recs) != 1 {
		t.Fatalf("%d log records, want 1:\n%s", len(recs), buf)
	}
	want := map[string]any{
		"level": "INFO", "to": m.To, "subject": m.Subject, "kind": perch.EmailPasswordReset,
	}
	for k, v := range want {
		if recs[0][k] != v {
			t.Errorf("log %s = %v, want %v", k, recs[0][k], v)
		}
	}
	// A reset link is a credential: whoever reads the log must not get it.
	if strings.Contains(buf.String(), "reset/tok") {
		t.Errorf("the log carries the link:\n%s", buf)
	}
}

func TestOutboxStoreFailure(t *testing.T) {
	t.Parallel()
	store := &memStore{err: errors.New("disk full")}
	logger, buf := jsonLogger()
	m := VerifyEmail("ada@example.org", "Ada", "https://perch.example.com/verify/tok")

	err := NewOutbox(store, mustBox(t), logger).Send(t.Context(), m)
	if err == nil || !errors.Is(err, store.err) {
		t.Fatalf("Send error = %v, want one wrapping %v", err, store.err)
	}
	if strings.Contains(buf.String(), "verify/tok") {
		t.Errorf("the log carries the link:\n%s", buf)
	}
}

// Without a key (PostgreSQL without PERCH_SECRET_KEY) the outbox keeps the
// envelope and withholds the link and bodies, and the log says which
// setting would keep them, without the link.
func TestOutboxWithoutAKeyWithholdsTheLink(t *testing.T) {
	t.Parallel()
	store := &memStore{}
	logger, buf := jsonLogger()
	m := Invitation("bob@example.org", "Ada", "Analytical", "admin", "https://perch.example.com/invitations/accept?token=inv_tok")

	if err := NewOutbox(store, nil, logger).Send(t.Context(), m); err != nil {
		t.Fatalf("Send: %v", err)
	}

	got := store.Messages()
	if len(got) != 1 || !got[0].Withheld || got[0].Sealed != nil || got[0].Link != "" || got[0].Text != "" || got[0].HTML != "" ||
		got[0].To != m.To || got[0].Kind != perch.EmailInvitation {
		t.Fatalf("stored %+v, want the envelope alone, withheld", got)
	}
	if opened, err := Open(got[0], mustBox(t)); !errors.Is(err, ErrWithheld) || opened.Link != "" || opened.To != m.To {
		t.Errorf("Open = %+v, %v; want the envelope and ErrWithheld", opened, err)
	}
	recs := logRecords(t, buf)
	if len(recs) != 1 || recs[0]["level"] != "WARN" || !strings.Contains(recs[0]["msg"].(string), "PERCH_SECRET_KEY") || recs[0]["to"] != m.To {
		t.Errorf("log = %v, want one warning naming PERCH_SECRET_KEY", recs)
	}
	if strings.Contains(buf.String(), "inv_tok") {
		t.Errorf("the log carries the link:\n%s", buf)
	}
}

// A kept message opens only with the key it was sealed under; mail an
// older Perch kept in the clear reads as it is.
func TestKeptOpensOnlyWithItsKey(t *testing.T) {
	t.Parallel()
	box := mustBox(t)
	k := Keep(VerifyEmail("ada@example.org", "Ada", "https://perch.example.com/verify/tok"), box)
	if _, err := Open(k, mustBox(t)); !errors.Is(err, secrets.ErrOtherKey) {
		t.Errorf("Open under another key = %v, want secrets.ErrOtherKey", err)
	}
	if m, err := Open(k, nil); !errors.Is(err, ErrNoKey) || m.Link != "" {
		t.Errorf("Open without a key = %+v, %v; want ErrNoKey", m, err)
	}
	old := perch.KeptMail{To: "ada@example.org", Subject: "Verify", Kind: perch.EmailVerify, Link: "https://perch.example.com/verify/old", Text: "t", HTML: "h"}
	if m, err := Open(old, nil); err != nil || m != (Message{To: old.To, Subject: old.Subject, Kind: old.Kind, Link: old.Link, Text: old.Text, HTML: old.HTML}) {
		t.Errorf("Open of mail kept in the clear = %+v, %v; want it as it is", m, err)
	}
}

func TestMailerChoosesPerSend(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	cfg := mustParse(t, ts.URL("smtp", testUser, testPass))
	store := &memStore{}
	logger, _ := jsonLogger()

	// The source flips between "no SMTP" and "SMTP" the way admin settings
	// would, and the Mailer follows without being rebuilt.
	var (
		mu         sync.Mutex
		configured bool
	)
	source := func(context.Context) (Config, bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return cfg, configured, nil
	}
	ml := NewMailer(source, store, mustBox(t), logger)
	m := VerifyEmail("ada@example.org", "Ada", "https://perch.example.com/verify/tok")

	if err := ml.Send(t.Context(), m); err != nil {
		t.Fatalf("Send without SMTP: %v", err)
	}
	mu.Lock()
	configured = true
	mu.Unlock()
	if err := ml.Send(t.Context(), m); err != nil {
		t.Fatalf("Send with SMTP: %v", err)
	}

	if n := len(store.Messages()); n != 1 {
		t.Errorf("outbox holds %d messages, want 1", n)
	}
	if n := len(ts.Received()); n != 1 {
		t.Errorf("SMTP server received %d messages, want 1", n)
	}
}

func TestMailerSourceError(t *testing.T) {
	t.Parallel()
	boom := errors.New("settings unavailable")
	ml := NewMailer(func(context.Context) (Config, bool, error) { return Config{}, false, boom }, &memStore{}, nil, nil)
	if err := ml.Send(t.Context(), Message{}); !errors.Is(err, boom) {
		t.Errorf("Send error = %v, want one wrapping %v", err, boom)
	}
}

func TestMailerLogsWithoutPassword(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	logger, buf := jsonLogger()
	ml := NewMailer(StaticSource(mustParse(t, ts.URL("smtp", testUser, testPass)), true), nil, nil, logger)

	if err := ml.Send(t.Context(), VerifyEmail("ada@example.org", "", "https://perch.example.com/v")); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if !strings.Contains(buf.String(), "mail sent") {
		t.Errorf("no log line for the sent mail:\n%s", buf)
	}
	if strings.Contains(buf.String(), testPass) {
		t.Errorf("log leaks the password:\n%s", buf)
	}
}
