package server

import (
	"net/http"
	"strings"

	"github.com/perch-dev/perch"
)

func (s *Server) listPlans(w http.ResponseWriter, r *http.Request) error {
	plans, err := s.adminDB.Plans(r.Context())
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, plans)
}

func (s *Server) listAnnouncements(w http.ResponseWriter, r *http.Request) error {
	list, err := s.adminDB.Announcements(r.Context())
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, list)
}

func (s *Server) createAnnouncement(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Title string `json:"title"`
		Body  string `json:"body"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	a := perch.Announcement{Title: strings.TrimSpace(in.Title), Body: strings.TrimSpace(in.Body)}
	if err := a.Validate(); err != nil {
		return err
	}
	created, err := s.adminDB.CreateAnnouncement(r.Context(), a.Title, a.Body)
	if err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditAnnouncementCreated, Target: announcementTarget(created.ID), Changes: map[string]any{"title": created.Title}})
	return respond(w, http.StatusCreated, created)
}

func (s *Server) updateAnnouncement(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	current, err := s.adminDB.Announcement(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	// Validate the announcement as it will be, so an edit cannot blank a field.
	next := *current
	if in.Title != nil {
		next.Title = strings.TrimSpace(*in.Title)
	}
	if in.Body != nil {
		next.Body = strings.TrimSpace(*in.Body)
	}
	if err := next.Validate(); err != nil {
		return err
	}
	updated, err := s.adminDB.UpdateAnnouncement(r.Context(), current.ID, perch.AnnouncementUpdate{Title: &next.Title, Body: &next.Body})
	if err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditAnnouncementUpdated, Target: announcementTarget(updated.ID), Changes: map[string]any{"title": updated.Title}})
	return respond(w, http.StatusOK, updated)
}

func (s *Server) deleteAnnouncement(w http.ResponseWriter, r *http.Request) error {
	if err := s.adminDB.DeleteAnnouncement(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditAnnouncementDeleted, Target: announcementTarget(r.PathValue("id"))})
	return noContent(w)
}

func announcementTarget(id string) perch.AuditTarget {
	return perch.AuditTarget{Type: "announcement", ID: id}
}
