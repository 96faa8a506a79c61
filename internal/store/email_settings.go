package store

import (
	"context"
	"encoding/base64"
	"errors"
	"time"
)

// EmailSettings are the SMTP settings an admin stored. The password is
// sealed (internal/secrets) by the caller: the store never sees it in the
// clear.
type EmailSettings struct {
	Host           string
	Port           int
	Username       string
	SealedPassword []byte // nil: no password
	From           string
	TLS            string // one of the perch.MailTLS* modes
	UpdatedAt      time.Time
}

// EmailSettings returns the stored settings, or ENOTFOUND when an admin
// has stored none.
func (s *Store) EmailSettings(ctx context.Context) (*EmailSettings, error) {
	var e EmailSettings
	var sealed string
	var updated int64
	err := s.r.QueryRowContext(ctx, `SELECT host, port, username, password_sealed, from_address, tls, updated_at
		FROM email_settings WHERE id = 1`).Scan(&e.Host, &e.Port, &e.Username, &sealed, &e.From, &e.TLS, &updated)
	if err != nil {
		return nil, notFound(err, "E-mail settings")
	}
	e.UpdatedAt = fromMS(updated)
	if sealed != "" {
		if e.SealedPassword, err = base64.StdEncoding.DecodeString(sealed); err != nil {
			return nil, errors.New("store: the stored SMTP password is not base64")
		}
	}
	return &e, nil
}

// PutEmailSettings stores e in place of any settings stored before. With
// keepPassword the stored password (if any) stays and e's is ignored. It
// answers the settings as stored.
func (s *Store) PutEmailSettings(ctx context.Context, e EmailSettings, keepPassword bool) (*EmailSettings, error) {
	sealed := ""
	if len(e.SealedPassword) > 0 && !keepPassword {
		sealed = base64.StdEncoding.EncodeToString(e.SealedPassword)
	}
	set := `host = excluded.host, port = excluded.port, username = excluded.username,
		from_address = excluded.from_address, tls = excluded.tls, updated_at = excluded.updated_at`
	if !keepPassword {
		set += `, password_sealed = excluded.password_sealed`
	}
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO email_settings
		(id, host, port, username, password_sealed, from_address, tls, updated_at)
		VALUES (1, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET `+set),
		e.Host, e.Port, e.Username, sealed, e.From, e.TLS, ms(s.now()))
	if err != nil {
		return nil, err
	}
	return s.EmailSettings(ctx)
}
