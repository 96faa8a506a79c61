package server

import (
	"net/http"
	"slices"

	"github.com/perch-dev/perch"
)

// listFeatures answers every feature flag with its rollout and overrides.
// Flags are few: the list is answered whole, not paged.
func (s *Server) listFeatures(w http.ResponseWriter, r *http.Request) error {
	flags, err := s.adminDB.FeatureFlags(r.Context())
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, flags)
}

// updateFeature changes a flag's default, rollout percentage or overrides;
// org_overrides replaces the whole list. Nothing caches flags, so every
// instance answers the change from the next request on.
func (s *Server) updateFeature(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Enabled        *bool                    `json:"enabled"`
		RolloutPercent *int                     `json:"rollout_percent"`
		OrgOverrides   *[]perch.FeatureOverride `json:"org_overrides"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	key := r.PathValue("key")
	if _, err := s.adminDB.FeatureFlag(r.Context(), key); err != nil {
		return err
	}
	u := perch.FeatureUpdate{Enabled: in.Enabled, RolloutPercent: in.RolloutPercent, OrgOverrides: in.OrgOverrides}
	if err := u.Validate(); err != nil {
		return err
	}
	before, after, err := s.adminDB.UpdateFeatureFlag(r.Context(), key, u)
	if err != nil {
		return err
	}
	if changes := featureChanges(before, after); len(changes) > 0 {
		s.audit(r, perch.AuditEntry{Action: perch.AuditAdminFeatureUpdated, Target: perch.AuditTarget{Type: "feature", ID: key}, Changes: changes})
	}
	return respond(w, http.StatusOK, after)
}

// featureChanges is what changed from before to after, each as {from, to}.
func featureChanges(before, after *perch.FeatureFlag) map[string]any {
	changes := map[string]any{}
	if before.Enabled != after.Enabled {
		changes["enabled"] = map[string]any{"from": before.Enabled, "to": after.Enabled}
	}
	if before.RolloutPercent != after.RolloutPercent {
		changes["rollout_percent"] = map[string]any{"from": before.RolloutPercent, "to": after.RolloutPercent}
	}
	if !slices.Equal(before.OrgOverrides, after.OrgOverrides) {
		changes["org_overrides"] = map[string]any{"from": before.OrgOverrides, "to": after.OrgOverrides}
	}
	return changes
}
