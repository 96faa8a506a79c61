package perch

import "time"

// Plan is a billing plan of GET /billing/plans.
type Plan struct {
	Slug         string  `json:"slug"`
	Name         string  `json:"name"`
	PriceMonthly float64 `json:"price_monthly"` // in the plan's currency, US dollars
	MaxSeats     int     `json:"max_seats"`
}

// Announcement is a message from the operators to every user.
type Announcement struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Announcement limits.
const (
	MaxAnnouncementTitleLen = 200
	MaxAnnouncementBodyLen  = 10000
)

// AnnouncementUpdate changes an announcement; nil fields stay as they are.
type AnnouncementUpdate struct {
	Title *string
	Body  *string
}

// Validate reports every problem with a complete announcement.
func (a *Announcement) Validate() error {
	p := Problems{}
	validateText(p, "title", a.Title, MaxAnnouncementTitleLen, SingleLine)
	validateText(p, "body", a.Body, MaxAnnouncementBodyLen, MultiLine)
	return p.Err()
}
