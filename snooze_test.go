package perch

import (
	"testing"
	"time"
)

func TestNextMorning(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	at := func(s string, loc *time.Location) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct{ now, want string }{
		{"2026-12-02 21:30", "2026-12-03 08:00"},
		{"2026-12-02 07:30", "2026-12-03 08:00"}, // this morning's is almost here: tomorrow's
		{"2026-12-02 02:10", "2026-12-02 08:00"}, // at night, the coming one
		{"2026-12-31 23:00", "2027-01-01 08:00"},
		{"2027-03-27 22:00", "2027-03-28 08:00"}, // across the change to summer time
	}
	for _, tt := range tests {
		got := NextMorning(at(tt.now, berlin))
		if want := at(tt.want, berlin); !got.Equal(want) || got.Location() != berlin {
			t.Errorf("NextMorning(%s) = %s, want %s", tt.now, got, want)
		}
	}
}
