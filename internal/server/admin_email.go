package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/mail"
	"github.com/perch-dev/perch/internal/store"
)

// testSendTimeout bounds an admin's test send, which the request waits for.
const testSendTimeout = 30 * time.Second

// errNoSecretKey answers an attempt to store a secret on a server without a
// key (PostgreSQL without PERCH_SECRET_KEY).
var errNoSecretKey = perch.Errorf(perch.EUNAVAILABLE,
	"This server has no secret key to encrypt secrets with: set PERCH_SECRET_KEY (32 random bytes in base64, e.g. the output of openssl rand -base64 32) and restart it.")

func (s *Server) getEmailConfig(w http.ResponseWriter, r *http.Request) error {
	cfg, err := s.mailCfg.Describe(r.Context())
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, cfg)
}

// putEmailConfig stores the e-mail settings, which take effect with the
// next message. The password is sealed; omitted, the stored one stays.
func (s *Server) putEmailConfig(w http.ResponseWriter, r *http.Request) error {
	var in perch.EmailSettings
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := in.Validate(); err != nil {
		return err
	}
	keep := in.Password == nil
	var sealed []byte
	if !keep && *in.Password != "" {
		if s.opts.Secrets == nil {
			return errNoSecretKey
		}
		sealed = s.opts.Secrets.Seal([]byte(*in.Password))
	}
	_, err := s.adminDB.PutEmailSettings(r.Context(), store.EmailSettings{Host: in.Host, Port: in.Port, Username: in.Username,
		SealedPassword: sealed, From: in.From, TLS: in.TLS}, keep)
	if err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditEmailConfigUpdated, Target: perch.AuditTarget{Type: "email_config"},
		Changes: map[string]any{"host": in.Host, "port": in.Port, "username": in.Username, "from": in.From, "tls": in.TLS,
			"password_changed": !keep}})
	cfg, err := s.mailCfg.Describe(r.Context())
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, cfg)
}

// testResult is the verdict of a test send.
type testResult struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// testEmailConfig sends a test message with the settings in force and
// answers what the SMTP server said: 200 either way, ok false when the
// message did not go.
func (s *Server) testEmailConfig(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		To string `json:"to"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	in.To = strings.TrimSpace(in.To)
	p := perch.Problems{}
	perch.ValidateEmail(p, in.To)
	if problem, bad := p["email"]; bad {
		return perch.Problems{"to": problem}.Err()
	}
	cfg, source, err := s.mailCfg.Current(r.Context())
	var res testResult
	switch {
	case perch.ErrorCode(err) == perch.EINTERNAL:
		return err
	case err != nil:
		res.Message = perch.ErrorMessage(err)
	case source == perch.MailSourceNone:
		res.Message = "No SMTP server is set, so mail waits in the outbox: store the settings first (or set PERCH_SMTP_URL)."
	default:
		res = s.sendTest(r.Context(), cfg, mail.TestMessage(in.To, principal(r).User.Email, s.opts.BaseURL))
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditEmailConfigTested, Target: perch.AuditTarget{Type: "email_config"},
		Changes: map[string]any{"to": in.To, "source": source, "ok": res.OK}})
	return respond(w, http.StatusOK, res)
}

// sendTest sends m through cfg now and reports the server's verdict.
func (s *Server) sendTest(ctx context.Context, cfg mail.Config, m mail.Message) testResult {
	sender, err := mail.NewSMTP(cfg)
	if err != nil {
		return testResult{Message: perch.ErrorMessage(err)}
	}
	ctx, cancel := context.WithTimeout(ctx, testSendTimeout)
	defer cancel()
	reply, err := sender.Deliver(ctx, m)
	if err != nil {
		return testResult{Message: err.Error()}
	}
	if reply == "" {
		reply = "OK"
	}
	return testResult{OK: true, Message: "The server accepted the message: " + reply}
}
