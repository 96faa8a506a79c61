package store

import (
	"context"

	"github.com/perch-dev/perch/internal/mail"
)

// SaveMail keeps a message that was not sent because no SMTP server is
// configured; it implements mail.OutboxStore.
func (s *Store) SaveMail(ctx context.Context, m mail.Message) error {
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO mail_outbox (id, recipient, subject, kind, link, body_text, body_html, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), newID(), m.To, m.Subject, m.Kind, m.Link, m.Text, m.HTML, ms(s.now()))
	return err
}

// Outbox lists the kept messages, newest first, at most limit of them.
func (s *Store) Outbox(ctx context.Context, limit int) ([]mail.Message, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT recipient, subject, kind, link, body_text, body_html FROM mail_outbox
		ORDER BY created_at DESC, id LIMIT ?`), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []mail.Message{}
	for rows.Next() {
		var m mail.Message
		if err := rows.Scan(&m.To, &m.Subject, &m.Kind, &m.Link, &m.Text, &m.HTML); err != nil {
			return nil, err
		}
		list = append(list, m)
	}
	return list, rows.Err()
}
