package storetest_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// Instances sharing a database, each on its own schedule, run a job once per
// period between them.
func TestJobsRunOncePerPeriodAcrossInstances(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Backends {
		t.Run(string(dialect), func(t *testing.T) {
			dsn := storetest.DSN(t, dialect)
			clock := storetest.NewClock()
			var instances []*store.Store
			for i := range 3 {
				s, err := store.Open(context.Background(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				s.Now = clock.Now
				if i == 0 {
					if err := s.Migrate(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
						t.Fatal(err)
					}
				}
				instances = append(instances, s)
			}
			var runs atomic.Int64
			job := func(context.Context) error {
				runs.Add(1)
				time.Sleep(20 * time.Millisecond) // long enough for the others to try meanwhile
				return nil
			}
			round := func() {
				var wg sync.WaitGroup
				for _, s := range instances {
					wg.Go(func() {
						if _, err := s.RunJob(context.Background(), "prune", 10*time.Minute, job); err != nil {
							t.Error(err)
						}
					})
				}
				wg.Wait()
			}
			round()
			if n := runs.Load(); n != 1 {
				t.Fatalf("first period: the job ran %d times, want 1", n)
			}
			clock.Advance(5 * time.Minute)
			round()
			if n := runs.Load(); n != 1 {
				t.Fatalf("within the period: the job ran %d times in all, want 1", n)
			}
			clock.Advance(6 * time.Minute)
			round()
			if n := runs.Load(); n != 2 {
				t.Fatalf("next period: the job ran %d times in all, want 2", n)
			}
		})
	}
}
