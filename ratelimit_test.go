package perch

import (
	"testing"
	"time"
)

func TestParseLimit(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Limit{"120/1m": {120, time.Minute}, " 10/15m ": {10, 15 * time.Minute}, "5/1h30m": {5, 90 * time.Minute}} {
		if got, err := ParseLimit(in); err != nil || got != want {
			t.Errorf("ParseLimit(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "120", "0/1m", "-1/1m", "x/1m", "10/", "10/fortnight", "10/-1m"} {
		if _, err := ParseLimit(in); err == nil {
			t.Errorf("ParseLimit(%q) succeeded", in)
		}
	}
}
