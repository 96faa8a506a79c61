package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"

	"github.com/perch-dev/perch"
)

// SaveMail keeps a message that was not sent because no SMTP server is
// configured; it implements mail.OutboxStore. Its link and bodies come
// sealed, or withheld, by the caller (mail.Keep): the store never sees them
// in the clear. Mail whose link is a credential expires with the link
// (perch.EmailLinkTTL): past it, the message helps nobody, and a copy of
// the database should hold as few credentials as it can, sealed or not.
func (s *Store) SaveMail(ctx context.Context, k perch.KeptMail) error {
	now := s.now()
	var expires sql.NullInt64
	if ttl := perch.EmailLinkTTL(k.Kind); ttl > 0 {
		expires = sql.NullInt64{Int64: ms(now.Add(ttl)), Valid: true}
	}
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO mail_outbox
		(id, recipient, subject, kind, link, body_text, body_html, sealed, withheld, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`), newID(), k.To, k.Subject, k.Kind, k.Link, k.Text, k.HTML,
		base64.StdEncoding.EncodeToString(k.Sealed), k.Withheld, ms(now), expires)
	return err
}

// Outbox lists the kept messages whose links have not expired, newest
// first, at most limit of them, as they are kept: mail.Open reads
// their links and bodies.
func (s *Store) Outbox(ctx context.Context, limit int) ([]perch.KeptMail, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT recipient, subject, kind, link, body_text, body_html, sealed, withheld
		FROM mail_outbox WHERE expires_at IS NULL OR expires_at > ?
		ORDER BY created_at DESC, id LIMIT ?`), ms(s.now()), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []perch.KeptMail{}
	for rows.Next() {
		var k perch.KeptMail
		var sealed string
		if err := rows.Scan(&k.To, &k.Subject, &k.Kind, &k.Link, &k.Text, &k.HTML, &sealed, &k.Withheld); err != nil {
			return nil, err
		}
		if sealed != "" {
			if k.Sealed, err = base64.StdEncoding.DecodeString(sealed); err != nil {
				return nil, errors.New("store: a sealed message in the outbox is not base64")
			}
		}
		list = append(list, k)
	}
	return list, rows.Err()
}

// PruneOutbox deletes the kept messages whose links have expired, and
// answers how many.
func (s *Store) PruneOutbox(ctx context.Context) (int64, error) {
	res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM mail_outbox WHERE expires_at <= ?`), ms(s.now()))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// SealOutbox seals, with seal, the links and bodies of the messages an
// older Perch kept in the clear (before migration 00025), and answers how
// many it sealed. Each is sealed at most once however many instances start
// at the same time.
func (s *Store) SealOutbox(ctx context.Context, seal func(perch.KeptMail) []byte) (int, error) {
	type clear struct {
		id string
		m  perch.KeptMail
	}
	var found []clear
	rows, err := s.r.QueryContext(ctx, `SELECT id, recipient, subject, kind, link, body_text, body_html FROM mail_outbox
		WHERE sealed = '' AND NOT withheld AND (link <> '' OR body_text <> '' OR body_html <> '')`)
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		var c clear
		if err := rows.Scan(&c.id, &c.m.To, &c.m.Subject, &c.m.Kind, &c.m.Link, &c.m.Text, &c.m.HTML); err != nil {
			rows.Close()
			return 0, err
		}
		found = append(found, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	n := 0
	for _, c := range found {
		res, err := s.w.ExecContext(ctx, s.q(`UPDATE mail_outbox SET sealed = ?, link = '', body_text = '', body_html = ''
			WHERE id = ? AND sealed = ''`), base64.StdEncoding.EncodeToString(seal(c.m)), c.id)
		if err != nil {
			return n, err
		}
		if done, err := res.RowsAffected(); err != nil {
			return n, err
		} else if done == 1 {
			n++
		}
	}
	return n, nil
}
