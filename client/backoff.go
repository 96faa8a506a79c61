package client

import "time"

// backoff yields the waits between connection attempts: the ceiling starts
// at min and doubles up to max, and each wait is drawn uniformly from zero
// to the ceiling ("full jitter"), so that clients dropped together do not
// come back together.
type backoff struct {
	min, max time.Duration
	jitter   func(n int64) int64 // uniform in [0, n)
	attempt  int
}

// ceiling is the longest wait of the next attempt.
func (b *backoff) ceiling() time.Duration {
	d := b.min
	for i := 0; i < b.attempt && d < b.max; i++ {
		d *= 2
	}
	return min(d, b.max)
}

func (b *backoff) next() time.Duration {
	d := time.Duration(b.jitter(int64(b.ceiling()) + 1))
	b.attempt++
	return d
}

func (b *backoff) reset() { b.attempt = 0 }
