package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
)

// Recorder writes workflow runs, stats and the payloads workflows ran on
// (kept for "Try it") in the background, in batches: the first run waits runLinger for others to join it, and
// whatever comes while one batch is written goes in the next, so busy
// ingest costs a few transactions a second rather than one per
// notification (on SQLite, each would wait for the one writer that ingest
// needs). Runs and kept payloads are a record, not the notification: a
// crash loses at most the batch being gathered.
type Recorder struct {
	store    *store.Store
	log      *slog.Logger
	hurry    chan struct{} // ends the wait of a batch at once (Wait)
	mu       sync.Mutex
	runs     map[string][]*perch.WorkflowRun // by organisation
	stats    map[string]perch.WorkflowStats
	payloads []store.KeptPayload
	flushing bool
	done     sync.WaitGroup
}

// NewRecorder returns a Recorder that writes to st; Wait joins it.
func NewRecorder(st *store.Store, log *slog.Logger) *Recorder {
	return &Recorder{store: st, log: log, hurry: make(chan struct{}, 1), runs: map[string][]*perch.WorkflowRun{}, stats: map[string]perch.WorkflowStats{}}
}

// Add queues runs of orgID's workflows, evaluations to count and payloads
// to keep.
func (rr *Recorder) Add(orgID string, runs []*perch.WorkflowRun, stats map[string]perch.WorkflowStats, payloads []store.KeptPayload) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if len(runs) > 0 {
		rr.runs[orgID] = append(rr.runs[orgID], runs...)
	}
	for id, d := range stats {
		st := rr.stats[id]
		st.Evaluated += d.Evaluated
		st.Matched += d.Matched
		st.Failed += d.Failed
		rr.stats[id] = st
	}
	rr.payloads = append(rr.payloads, payloads...)
	if !rr.flushing && (len(rr.runs) > 0 || len(rr.stats) > 0 || len(rr.payloads) > 0) {
		rr.flushing = true
		rr.done.Add(1)
		go rr.flush()
	}
}

// runLinger is how long a batch of runs gathers before it is written: a
// second's runs cost one transaction.
const runLinger = time.Second

// flush writes batches until nothing is waiting.
func (rr *Recorder) flush() {
	defer rr.done.Done()
	linger := time.NewTimer(runLinger)
	select {
	case <-linger.C:
	case <-rr.hurry:
		linger.Stop()
	}
	for {
		rr.mu.Lock()
		runs, stats, payloads := rr.runs, rr.stats, rr.payloads
		if len(runs) == 0 && len(stats) == 0 && len(payloads) == 0 {
			rr.flushing = false
			rr.mu.Unlock()
			return
		}
		rr.runs, rr.stats, rr.payloads = map[string][]*perch.WorkflowRun{}, map[string]perch.WorkflowStats{}, nil
		rr.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for orgID, list := range runs {
			if err := rr.store.AddWorkflowRuns(ctx, orgID, list); err != nil {
				rr.log.Error("recording workflow runs failed", "org", orgID, "runs", len(list), "err", err)
			}
		}
		if len(stats) > 0 {
			if err := rr.store.AddWorkflowStats(ctx, stats); err != nil {
				rr.log.Error("counting workflow evaluations failed", "workflows", len(stats), "err", err)
			}
		}
		if err := rr.store.KeepPayloads(ctx, payloads); err != nil {
			rr.log.Error("keeping workflow payloads failed", "payloads", len(payloads), "err", err)
		}
		cancel()
	}
}

// Wait writes what was added so far at once, and returns when it is
// written.
func (rr *Recorder) Wait() {
	select {
	case rr.hurry <- struct{}{}:
	default:
	}
	rr.done.Wait()
}
