package perch

import "time"

// MorningHour is when "until tomorrow morning" ends a snooze, in the
// user's time zone.
const MorningHour = 8

// NextMorning is when a snooze "until tomorrow morning" that starts at now
// ends, in now's location: 08:00 of the next day, or of this one while it
// is still night (before 05:00), when "tomorrow morning" means the coming
// one.
func NextMorning(now time.Time) time.Time {
	y, m, d := now.Date()
	day := d + 1
	if now.Hour() < 5 {
		day = d
	}
	return time.Date(y, m, day, MorningHour, 0, 0, 0, now.Location())
}
