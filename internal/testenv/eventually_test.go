package testenv

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTB records a Fatalf and ends its goroutine, as testing's does.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls fn with a fakeTB on a goroutine of its own, so that its
// Fatalf can end it, and answers what it failed with ("" if nothing).
func run(fn func(tb *fakeTB)) string {
	tb := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	return tb.failed
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	start := time.Now()
	failed := run(func(tb *fakeTB) {
		Eventually(tb, 10*time.Second, func() bool { return calls.Add(1) >= 3 }, "never")
	})
	if failed != "" {
		t.Fatalf("failed: %s", failed)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("cond called %d times, want 3", n)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v to see a condition true at the third call", d)
	}
}

func TestEventuallyFailsAfterTheTimeoutWithTheMessage(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	start := time.Now()
	failed := run(func(tb *fakeTB) {
		Eventually(tb, 50*time.Millisecond, func() bool { calls.Add(1); return false }, "still %d clients", 2)
		tb.failed = "returned"
	})
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("gave up after %v, before the timeout", d)
	}
	if !strings.Contains(failed, "still 2 clients") || !strings.Contains(failed, "50ms") {
		t.Errorf("failed with %q, want the message and the timeout", failed)
	}
	if calls.Load() < 3 {
		t.Errorf("cond called %d times in 50ms", calls.Load())
	}
}

func TestEventuallyNilFailsWithTheLastError(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	failed := run(func(tb *fakeTB) {
		EventuallyNil(tb, 30*time.Millisecond, func() error { return fmt.Errorf("seen %d", calls.Add(1)) })
	})
	if want := fmt.Sprintf("seen %d", calls.Load()); !strings.HasSuffix(failed, want) {
		t.Errorf("failed with %q, want the last error %q", failed, want)
	}
}

func TestPollChecksAtTheDeadline(t *testing.T) {
	t.Parallel()
	// A condition that becomes true only once the deadline has passed is
	// still seen: the last check starts at or after the deadline.
	deadline := time.Now().Add(30 * time.Millisecond)
	err := Poll(30*time.Millisecond, func() error {
		if !time.Now().Before(deadline) {
			return nil
		}
		return errors.New("not yet")
	})
	if err != nil {
		t.Fatalf("Poll = %v, want nil", err)
	}
}
