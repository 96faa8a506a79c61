package server

import (
	"cmp"
	"net/http"

	"github.com/perch-dev/perch"
)

// listRegions answers the deployments a person may sign in to (docs/DESIGN.md,
// Regions), this one marked current. Without a list it is this one alone.
func (s *Server) listRegions(w http.ResponseWriter, _ *http.Request) error {
	regions := s.opts.Regions
	if len(regions) == 0 {
		regions = []perch.Region{{Name: cmp.Or(s.opts.Region, "default"), URL: s.opts.BaseURL, Current: true}}
	}
	return respond(w, http.StatusOK, regions)
}
