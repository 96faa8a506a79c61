package perch

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// FeatureFlag is a switch for a capability. Whether it is on for a user is
// decided in order (EnabledFor): an override for the user's organisation,
// else the user's place in the rollout, else the default, Enabled.
type FeatureFlag struct {
	Key            string            `json:"key"`
	Description    string            `json:"description"`
	Enabled        bool              `json:"enabled"`
	RolloutPercent int               `json:"rollout_percent"` // 0–100: the share of users who have it on while Enabled is false
	OrgOverrides   []FeatureOverride `json:"org_overrides"`   // by organisation id
}

// FeatureOverride turns a flag on or off for every member of one
// organisation, whatever its default and rollout say.
type FeatureOverride struct {
	OrgID   string `json:"org_id"`
	Enabled bool   `json:"enabled"`
}

// MaxFeatureOverrides is how many organisations one flag may name.
const MaxFeatureOverrides = 1000

// EnabledFor reports whether the flag is on for the user userID of the
// organisation orgID.
func (f *FeatureFlag) EnabledFor(userID, orgID string) bool {
	for _, o := range f.OrgOverrides {
		if o.OrgID == orgID {
			return o.Enabled
		}
	}
	if InRollout(f.Key, userID, f.RolloutPercent) {
		return true
	}
	return f.Enabled
}

// InRollout reports whether userID is among the percent of users that the
// rollout of the flag key reaches. A user's place (RolloutBucket) never
// changes, so raising the percentage only adds users; and it depends on the
// key, so each flag reaches a different set of users.
func InRollout(key, userID string, percent int) bool {
	return RolloutBucket(key, userID) < percent
}

// RolloutBucket is the place of userID in the rollout of the flag key: a
// number from 0 to 99 taken from SHA-256 of "key:userID".
func RolloutBucket(key, userID string) int {
	sum := sha256.Sum256([]byte(key + ":" + userID))
	return int(binary.BigEndian.Uint64(sum[:8]) % 100)
}

// FeatureUpdate changes a flag; nil fields stay as they are. OrgOverrides,
// when set, replaces the whole list (an empty list removes every override).
type FeatureUpdate struct {
	Enabled        *bool
	RolloutPercent *int
	OrgOverrides   *[]FeatureOverride
}

// Validate reports every problem with u that needs no lookup: a percentage
// outside 0–100, and overrides without an organisation, naming one twice,
// or too many of them. Whether each organisation exists is the store's to
// say.
func (u FeatureUpdate) Validate() error {
	p := Problems{}
	if u.RolloutPercent != nil && (*u.RolloutPercent < 0 || *u.RolloutPercent > 100) {
		p.Add("rollout_percent", "must be a whole number from 0 to 100")
	}
	if u.OrgOverrides != nil {
		list := *u.OrgOverrides
		if len(list) > MaxFeatureOverrides {
			p.Add("org_overrides", fmt.Sprintf("may name at most %d organisations", MaxFeatureOverrides))
		}
		seen := map[string]bool{}
		for i, o := range list {
			field := OverrideField(i)
			switch id := o.OrgID; {
			case id == "":
				p.Add(field, "is required")
			case seen[id]:
				p.Add(field, "names an organisation already in the list")
			default:
				seen[id] = true
			}
		}
	}
	return p.Err()
}

// OverrideField names the org_id of the i-th override in validation
// problems: org_overrides[i].org_id.
func OverrideField(i int) string { return fmt.Sprintf("org_overrides[%d].org_id", i) }
