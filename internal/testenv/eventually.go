package testenv

import (
	"errors"
	"testing"
	"time"
)

// Polling starts this often and slows, doubling, to at most pollMax: what
// happens at once is seen within a millisecond or two, and a long wait
// costs few calls.
const (
	pollMin = time.Millisecond
	pollMax = 20 * time.Millisecond
)

// Eventually calls cond until it reports true, and fails tb (Fatalf, with
// the formatted message) when timeout passes first. It is the tests' one
// way to wait for something that happens in the background: a goroutine,
// another instance, a server started by the test. It must be called from
// the test's own goroutine, as Fatalf must.
func Eventually(tb testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	tb.Helper()
	err := Poll(timeout, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
	if err != nil {
		tb.Fatalf("after %v: "+format, append([]any{timeout}, args...)...)
	}
}

// EventuallyNil calls check until it returns nil, and fails tb with the
// last error it returned when timeout passes first: for a wait whose
// failure is best told by what was last seen (a count, a body).
func EventuallyNil(tb testing.TB, timeout time.Duration, check func() error) {
	tb.Helper()
	if err := Poll(timeout, check); err != nil {
		tb.Fatalf("after %v: %v", timeout, err)
	}
}

// Poll calls check until it returns nil and returns nil, or returns the
// last error once timeout has passed. check is called at least once, and
// its last call starts at or after the deadline, so what holds at the
// deadline is seen. It is what
// Eventually and EventuallyNil are made of, for code that must not fail a
// test itself (a helper that returns an error, or runs off the test's
// goroutine).
func Poll(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	wait := pollMin
	for {
		err := check()
		if err == nil {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return err
		}
		time.Sleep(min(wait, left))
		wait = min(2*wait, pollMax)
	}
}

var errNotYet = errors.New("condition not met")
