package store

import (
	"context"
	"database/sql"
	"strings"

	"github.com/perch-dev/perch"
)

// Features returns the feature flags as they apply to userID, a member of
// orgID, by key (perch.FeatureFlag.EnabledFor). Nothing is cached: a change
// is seen by the next request on every instance.
func (s *Store) Features(ctx context.Context, userID, orgID string) (map[string]bool, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT f.key, f.enabled, f.rollout_percent, o.enabled
		FROM feature_flags f LEFT JOIN feature_overrides o ON o.key = f.key AND o.org_id = ?`), orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	flags := map[string]bool{}
	for rows.Next() {
		var f perch.FeatureFlag
		var override sql.NullBool
		if err := rows.Scan(&f.Key, &f.Enabled, &f.RolloutPercent, &override); err != nil {
			return nil, err
		}
		if override.Valid {
			f.OrgOverrides = []perch.FeatureOverride{{OrgID: orgID, Enabled: override.Bool}}
		}
		flags[f.Key] = f.EnabledFor(userID, orgID)
	}
	return flags, rows.Err()
}

// FeatureFlags lists every flag with its overrides, by key.
func (s *Store) FeatureFlags(ctx context.Context) ([]*perch.FeatureFlag, error) {
	return s.featureFlags(ctx, s.r, "")
}

// FeatureFlag returns the flag key with its overrides, or ENOTFOUND.
func (s *Store) FeatureFlag(ctx context.Context, key string) (*perch.FeatureFlag, error) {
	return s.featureFlag(ctx, s.r, key)
}

func (s *Store) featureFlag(ctx context.Context, db querier, key string) (*perch.FeatureFlag, error) {
	flags, err := s.featureFlags(ctx, db, key)
	if err != nil {
		return nil, err
	}
	if len(flags) == 0 {
		return nil, perch.Errorf(perch.ENOTFOUND, "There is no feature flag %q.", key)
	}
	return flags[0], nil
}

// featureFlags reads the flag key, or every flag when key is "".
func (s *Store) featureFlags(ctx context.Context, db querier, key string) ([]*perch.FeatureFlag, error) {
	where, args := "", []any{}
	if key != "" {
		where, args = " WHERE key = ?", []any{key}
	}
	rows, err := db.QueryContext(ctx, s.q(`SELECT key, description, enabled, rollout_percent FROM feature_flags`+where+` ORDER BY key`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	flags := []*perch.FeatureFlag{}
	byKey := map[string]*perch.FeatureFlag{}
	for rows.Next() {
		f := &perch.FeatureFlag{OrgOverrides: []perch.FeatureOverride{}}
		if err := rows.Scan(&f.Key, &f.Description, &f.Enabled, &f.RolloutPercent); err != nil {
			return nil, err
		}
		flags, byKey[f.Key] = append(flags, f), f
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	if len(flags) == 0 {
		return flags, nil
	}
	rows, err = db.QueryContext(ctx, s.q(`SELECT key, org_id, enabled FROM feature_overrides`+where+` ORDER BY key, org_id`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var o perch.FeatureOverride
		if err := rows.Scan(&k, &o.OrgID, &o.Enabled); err != nil {
			return nil, err
		}
		if f := byKey[k]; f != nil {
			f.OrgOverrides = append(f.OrgOverrides, o)
		}
	}
	return flags, rows.Err()
}

// UpdateFeatureFlag changes the flag key as u says and returns it before
// and after the change. It returns ENOTFOUND for an unknown key and
// EVALIDATION, naming each override, when an override names no
// organisation. u must be valid (perch.FeatureUpdate.Validate).
func (s *Store) UpdateFeatureFlag(ctx context.Context, key string, u perch.FeatureUpdate) (before, after *perch.FeatureFlag, err error) {
	err = s.tx(ctx, func(tx *sql.Tx) error {
		// Lock the flag's row first (PostgreSQL; SQLite has one writer), so
		// that changes made at once apply one after the other.
		res, err := tx.ExecContext(ctx, s.q(`UPDATE feature_flags SET enabled = enabled WHERE key = ?`), key)
		if err := expectOne(res, err, "Feature flag"); err != nil {
			return err
		}
		if before, err = s.featureFlag(ctx, tx, key); err != nil {
			return err
		}
		if u.Enabled != nil {
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE feature_flags SET enabled = ? WHERE key = ?`), *u.Enabled, key); err != nil {
				return err
			}
		}
		if u.RolloutPercent != nil {
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE feature_flags SET rollout_percent = ? WHERE key = ?`), *u.RolloutPercent, key); err != nil {
				return err
			}
		}
		if u.OrgOverrides != nil {
			if err := s.replaceOverrides(ctx, tx, key, *u.OrgOverrides); err != nil {
				return err
			}
		}
		after, err = s.featureFlag(ctx, tx, key)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return before, after, nil
}

// replaceOverrides makes list the overrides of the flag key, after checking
// that every organisation it names exists.
func (s *Store) replaceOverrides(ctx context.Context, tx *sql.Tx, key string, list []perch.FeatureOverride) error {
	if len(list) > 0 {
		ids := make([]any, len(list))
		for i, o := range list {
			ids[i] = o.OrgID
		}
		found, err := column[string](tx.QueryContext(ctx,
			s.q(`SELECT id FROM orgs WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`), ids...))
		if err != nil {
			return err
		}
		exists := map[string]bool{}
		for _, id := range found {
			exists[id] = true
		}
		p := perch.Problems{}
		for i, o := range list {
			if !exists[o.OrgID] {
				p.Add(perch.OverrideField(i), "is not an organisation")
			}
		}
		if err := p.Err(); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM feature_overrides WHERE key = ?`), key); err != nil {
		return err
	}
	for _, o := range list {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO feature_overrides (key, org_id, enabled) VALUES (?, ?, ?)`),
			key, o.OrgID, o.Enabled); err != nil {
			return err
		}
	}
	return nil
}
