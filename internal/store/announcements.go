package store

import (
	"context"

	"github.com/perch-dev/perch"
)

const announcementColumns = `id, title, body, created_at, updated_at`

func scanAnnouncement(row interface{ Scan(...any) error }) (*perch.Announcement, error) {
	var a perch.Announcement
	var created, updated int64
	if err := row.Scan(&a.ID, &a.Title, &a.Body, &created, &updated); err != nil {
		return nil, err
	}
	a.CreatedAt, a.UpdatedAt = fromMS(created), fromMS(updated)
	return &a, nil
}

// Announcements lists every announcement, newest first.
func (s *Store) Announcements(ctx context.Context) ([]*perch.Announcement, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+announcementColumns+` FROM announcements ORDER BY created_at DESC, id DESC`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []*perch.Announcement{}
	for rows.Next() {
		a, err := scanAnnouncement(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, a)
	}
	return list, rows.Err()
}

// Announcement returns one announcement, or ENOTFOUND.
func (s *Store) Announcement(ctx context.Context, id string) (*perch.Announcement, error) {
	a, err := scanAnnouncement(s.r.QueryRowContext(ctx, s.q(`SELECT `+announcementColumns+` FROM announcements WHERE id = ?`), id))
	return a, notFound(err, "Announcement")
}

// CreateAnnouncement stores a new announcement; title and body must be valid.
func (s *Store) CreateAnnouncement(ctx context.Context, title, body string) (*perch.Announcement, error) {
	now := s.now()
	a := &perch.Announcement{ID: newID(), Title: title, Body: body, CreatedAt: now, UpdatedAt: now}
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO announcements (id, title, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`),
		a.ID, a.Title, a.Body, ms(now), ms(now))
	if err != nil {
		return nil, err
	}
	return a, nil
}

// UpdateAnnouncement changes the given fields of an announcement.
func (s *Store) UpdateAnnouncement(ctx context.Context, id string, upd perch.AnnouncementUpdate) (*perch.Announcement, error) {
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE announcements SET title = COALESCE(?, title), body = COALESCE(?, body), updated_at = ? WHERE id = ?`),
		upd.Title, upd.Body, ms(s.now()), id)
	if err := expectOne(res, err, "Announcement"); err != nil {
		return nil, err
	}
	return s.Announcement(ctx, id)
}

// DeleteAnnouncement deletes an announcement, or returns ENOTFOUND.
func (s *Store) DeleteAnnouncement(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM announcements WHERE id = ?`), id)
	return expectOne(res, err, "Announcement")
}
