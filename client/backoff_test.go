package client

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	ceilings := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
		4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	highest := make([]time.Duration, len(ceilings))
	for range 500 {
		b := &backoff{min: 250 * time.Millisecond, max: 30 * time.Second, jitter: rand.Int64N}
		for i, ceil := range ceilings {
			d := b.next()
			if d < 0 || d > ceil {
				t.Fatalf("wait %d = %s, want within [0, %s]", i, d, ceil)
			}
			highest[i] = max(highest[i], d)
		}
		if b.reset(); b.ceiling() != 250*time.Millisecond {
			t.Fatalf("ceiling after reset = %s", b.ceiling())
		}
	}
	for i, ceil := range ceilings {
		if highest[i] < ceil*3/4 { // full jitter reaches near the ceiling
			t.Errorf("wait %d never exceeded %s of a %s ceiling", i, highest[i], ceil)
		}
	}
}
