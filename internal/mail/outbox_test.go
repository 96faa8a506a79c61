package mail

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/perch-dev/perch"
)

// memStore is an in-memory OutboxStore.
type memStore struct {
	mu   sync.Mutex
	msgs []Message
	err  error // returned by SaveMail when set
}

func (s *memStore) SaveMail(_ context.Context, m Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.msgs = append(s.msgs, m)
	return nil
}

func (s *memStore) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
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

func TestOutboxStoresAndLogs(t *testing.T) {
	store := &memStore{}
	logger, buf := jsonLogger()
	m := PasswordReset("ada@example.org", "Ada", "https://perch.example.com/reset/tok")

	if err := NewOutbox(store, logger).Send(t.Context(), m); err != nil {
		t.Fatalf("Send: %v", err)
	}

	if got := store.Messages(); len(got) != 1 || got[0] != m {
		t.Errorf("stored %+v, want exactly the message sent", got)
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
	store := &memStore{err: errors.New("disk full")}
	logger, buf := jsonLogger()
	m := VerifyEmail("ada@example.org", "Ada", "https://perch.example.com/verify/tok")

	err := NewOutbox(store, logger).Send(t.Context(), m)
	if err == nil || !errors.Is(err, store.err) {
		t.Fatalf("Send error = %v, want one wrapping %v", err, store.err)
	}
	if strings.Contains(buf.String(), "verify/tok") {
		t.Errorf("the log carries the link:\n%s", buf)
	}
}

func TestMailerChoosesPerSend(t *testing.T) {
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
	ml := NewMailer(source, store, logger)
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
	boom := errors.New("settings unavailable")
	ml := NewMailer(func(context.Context) (Config, bool, error) { return Config{}, false, boom }, &memStore{}, nil)
	if err := ml.Send(t.Context(), Message{}); !errors.Is(err, boom) {
		t.Errorf("Send error = %v, want one wrapping %v", err, boom)
	}
}

func TestMailerLogsWithoutPassword(t *testing.T) {
	ts := startServer(t, serverOptions{})
	logger, buf := jsonLogger()
	ml := NewMailer(StaticSource(mustParse(t, ts.URL("smtp", testUser, testPass)), true), nil, logger)

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
