package perch

import (
	"strconv"
	"strings"
)

// Paging of admin lists: ?cursor=&limit= (default 50, at most 200), answered as
// {data: [...], next_cursor}.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 200
)

// Page is one request for a page of a list: the items after Cursor (an
// opaque value the previous page answered; "" for the first), at most Limit.
type Page struct {
	Cursor string
	Limit  int
}

// ParsePage reads ?cursor= and ?limit=. A missing limit is the default; a
// limit that is not a whole number from 1 to MaxPageLimit is a bad request.
func ParsePage(cursor, limit string) (Page, error) {
	p := Page{Cursor: strings.TrimSpace(cursor), Limit: DefaultPageLimit}
	if len(p.Cursor) > 200 {
		return Page{}, Errorf(EBADREQUEST, "The cursor is not one this server answered.")
	}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > MaxPageLimit {
			return Page{}, Errorf(EBADREQUEST, "limit must be a whole number from 1 to %d.", MaxPageLimit)
		}
		p.Limit = n
	}
	return p, nil
}
