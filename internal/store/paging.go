package store

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// The admin lists of users and organisations are ordered newest first by
// (created_at, id), which is stable however rows are added, and page by a
// cursor that names the last row answered. Clients treat it as opaque.

var errBadCursor = perch.Errorf(perch.EBADREQUEST, "The cursor is not one this server answered.")

// encodeCursor is the cursor of the page after the row (at, id).
func encodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(ms(at), 10) + ":" + id))
}

// afterCursor adds to where the condition that selects the rows after
// cursor ("" for none) in the order of the table aliased t; a cursor this
// store did not make is EBADREQUEST.
func afterCursor(cursor, t string, where *[]string, args *[]any) error {
	if cursor == "" {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return errBadCursor
	}
	at, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || n < 0 || !plainID(id) {
		return errBadCursor
	}
	*where = append(*where, `(`+t+`.created_at < ? OR (`+t+`.created_at = ? AND `+t+`.id < ?))`)
	*args = append(*args, n, n, id)
	return nil
}

// plainID reports whether id could be one of this store's ids: lower-case
// letters and digits, and not too long to be one.
func plainID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// whereClause joins conditions with AND, or is "" for none.
func whereClause(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return ` WHERE ` + strings.Join(conds, ` AND `)
}

// containsPattern is a LIKE pattern (with ESCAPE '\') that matches text
// holding q, lower-cased: the column compared must be lower-cased too, as
// LIKE ignores case on SQLite (ASCII only) but not on PostgreSQL.
func containsPattern(q string) string {
	q = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.ToLower(q))
	return "%" + q + "%"
}
