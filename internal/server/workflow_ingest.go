package server

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/worker"
	"github.com/perch-dev/perch/internal/workflow"
)

// programs answers orgID's enabled workflows, compiled, in the order they
// run; loaded from the store the first time and kept until they change.
func (s *Server) programs(ctx context.Context, orgID string) ([]flow, error) {
	f := s.flows
	f.mu.RLock()
	list, ok := f.orgs[orgID]
	gen := f.gen
	f.mu.RUnlock()
	if ok {
		return list, nil
	}
	ws, err := s.workflowDB.EnabledWorkflows(ctx, orgID)
	if err != nil {
		return nil, err
	}
	list = make([]flow, 0, len(ws))
	for _, w := range ws {
		p, err := f.cache.Program(w)
		if err != nil {
			// The API compiles every workflow it saves: this is a workflow
			// saved by an older release that no longer compiles.
			s.log.Error("an enabled workflow does not compile; it is skipped", "workflow", w.ID, "org", orgID, "err", err)
			continue
		}
		list = append(list, flow{w: w, p: p})
	}
	f.mu.Lock()
	if f.gen == gen {
		f.orgs[orgID] = list
	}
	f.mu.Unlock()
	return list, nil
}

// flowed is what an organisation's workflows made of one delivery's
// notifications.
type flowed struct {
	orgID string
	keep  []store.NewNotification // to store and push, as the workflows left them
	runs  [][]*perch.WorkflowRun  // keep[i]'s runs, recorded once it has an id
	other []*perch.WorkflowRun    // runs of the notifications withheld
	stats map[string]perch.WorkflowStats
	held  int  // notifications dropped, throttled or digested
	jobs  bool // some notification carries a forward or an e-mail
	// payload is the delivery's body the workflows read, kept with each
	// notification stored for "Try it" (nil: none, or too large to keep).
	payload []byte
}

// applyWorkflows runs orgID's enabled workflows, in order, on each of a
// delivery's notifications before it is stored: each workflow sees what
// the ones before it made, and one that drops, throttles or digests the
// notification ends its run. body is the sender's JSON, decoded only if an
// expression reads payload. It answers nil when the organisation has no
// enabled workflow.
//
// A workflow that fails (or the store failing to load them) never costs
// the notification: it goes on as it was before that workflow, and the
// run records why.
func (s *Server) applyWorkflows(ctx context.Context, orgID string, body []byte, batch []store.NewNotification) *flowed {
	list, err := s.programs(ctx, orgID)
	if err != nil {
		s.log.Error("loading the organisation's workflows failed; its notifications go unchanged", "org", orgID, "err", err)
		return nil
	}
	if len(list) == 0 {
		return nil
	}
	now := s.now()
	out := &flowed{orgID: orgID, keep: batch[:0:0], stats: make(map[string]perch.WorkflowStats, len(list))}
	hooks := workflow.Hooks{
		Throttle: func(ctx context.Context, key string, max int, per time.Duration) (bool, error) {
			return s.workflowDB.Throttle(ctx, orgID, key, max, per, now)
		},
		Digest: func(ctx context.Context, key string, window time.Duration, n perch.Notification) error {
			_, err := s.workflowDB.HoldForDigest(ctx, orgID, key, window, n, now)
			return err
		},
	}
	in := workflow.Input{Body: workflow.NewPayload(body), Now: now}
	for _, nn := range batch {
		var runs []*perch.WorkflowRun
		withheld := false
		for _, fl := range list {
			in.Notification = nn.Notification
			began := time.Now()
			res := fl.p.Run(ctx, in, hooks)
			if res.Status != perch.RunFailed && res.Notification.Scope != nn.Notification.Scope {
				res = s.checkRoute(ctx, orgID, nn.Notification, res)
			}
			st := out.stats[fl.w.ID]
			st.Evaluated++
			if res.Matched {
				st.Matched++
			}
			if res.Status == perch.RunFailed {
				st.Failed++
			}
			out.stats[fl.w.ID] = st
			if res.Status == "" {
				continue
			}
			run := &perch.WorkflowRun{ID: store.NewRunID(now), WorkflowID: fl.w.ID, WorkflowVersion: fl.w.Version, Status: res.Status,
				Steps: res.Steps, DurationUS: time.Since(began).Microseconds(), CreatedAt: now}
			runs = append(runs, run)
			nn.Notification = res.Notification
			nn.Jobs = append(nn.Jobs, jobsOf(orgID, run, res)...)
			if res.Status == perch.RunDropped || res.Status == perch.RunThrottled || res.Status == perch.RunDigested {
				withheld = true
				break
			}
		}
		if withheld {
			cancelQueued(runs)
			out.other = append(out.other, runs...)
			out.held++
			continue
		}
		out.jobs = out.jobs || len(nn.Jobs) > 0
		out.keep = append(out.keep, nn)
		out.runs = append(out.runs, runs)
	}
	return out
}

// keepPayload has the notifications the workflows ran on keep the payload they
// read, for "Try it" on them later; one larger than the store keeps is not
// kept (docs/DESIGN.md, Kept payloads).
func (f *flowed) keepPayload(payload []byte) {
	if len(payload) > 0 && len(payload) <= store.MaxKeptPayload {
		f.payload = payload
	}
}

// cancelQueued marks the forwards and e-mails of earlier workflows skipped
// when a later one withheld the notification: they go with the
// notification as delivered, and it was not.
func cancelQueued(runs []*perch.WorkflowRun) {
	for _, r := range runs {
		for i := range r.Steps {
			if r.Steps[i].Status == "queued" {
				r.Steps[i].Status, r.Steps[i].Detail = "skipped", "a later workflow withheld the notification"
			}
		}
	}
}

// checkRoute makes sure a route step kept the notification within orgID:
// the organisation itself, one of its teams, or one of its members (who
// may have left since the workflow was saved). Otherwise the run failed,
// and the notification goes on as it came.
func (s *Server) checkRoute(ctx context.Context, orgID string, before perch.Notification, res workflow.Result) workflow.Result {
	to := res.Notification.Scope
	var err error
	switch to.Type {
	case perch.ScopeOrg:
		res.Notification.Scope.ID = orgID
		return res
	case perch.ScopeTeam:
		_, err = s.workflowDB.Team(ctx, orgID, to.ID)
	case perch.ScopeUser:
		_, err = s.workflowDB.Member(ctx, orgID, to.ID)
	default:
		err = perch.Errorf(perch.EVALIDATION, "unknown scope")
	}
	if err == nil {
		return res
	}
	detail := fmt.Sprintf("the %s %s is not in the organisation", to.Type, to.ID)
	if perch.ErrorCode(err) != perch.ENOTFOUND {
		detail = "the route could not be checked: " + err.Error()
	}
	steps := append([]perch.RunStep(nil), res.Steps...)
	for i := range steps {
		if steps[i].Type == perch.StepRoute {
			steps[i].Status, steps[i].Detail = "failed", detail
		}
	}
	return workflow.Result{Matched: res.Matched, Notification: before, Status: perch.RunFailed, Steps: steps}
}

// jobsOf are the forward and e-mail jobs of run, whose result is res, each
// naming the run and the index of its step: the engine lists a run's
// forwards and e-mails in the order of its steps, each step queued.
func jobsOf(orgID string, run *perch.WorkflowRun, res workflow.Result) []store.NotificationJob {
	var jobs []store.NotificationJob
	forwards, emails := res.Forwards, res.Emails
	for i, st := range res.Steps {
		if st.Status != perch.DeliveryQueued {
			continue
		}
		job := store.NotificationJob{OrgID: orgID, WorkflowID: run.WorkflowID, RunID: run.ID, Step: i}
		switch {
		case st.Type == perch.StepForward && len(forwards) > 0:
			f := forwards[0]
			forwards = forwards[1:]
			job.Kind = store.JobWorkflowForward
			job.Payload = func(n perch.Notification) (json.RawMessage, error) {
				return json.Marshal(worker.ForwardJob{WorkflowID: run.WorkflowID, Notification: n, URL: f.URL, Secret: f.Secret})
			}
		case st.Type == perch.StepEmail && len(emails) > 0:
			e := emails[0]
			emails = emails[1:]
			job.Kind = store.JobWorkflowEmail
			job.Payload = func(n perch.Notification) (json.RawMessage, error) {
				return json.Marshal(worker.EmailJob{WorkflowID: run.WorkflowID, Notification: n, To: e.To})
			}
		default:
			continue
		}
		jobs = append(jobs, job)
	}
	return jobs
}

// stored records the runs and keeps the payload once keep was stored
// (stored[i] is keep[i]'s outcome): a redelivery's are not recorded again.
func (f *flowed) stored(rec *worker.Recorder, stored []store.Stored) {
	runs := f.other
	var kept []store.KeptPayload
	for i, st := range stored {
		if st.Duplicate {
			continue
		}
		if f.payload != nil {
			kept = append(kept, store.KeptPayload{NotificationID: st.Notification.ID, Body: f.payload})
		}
		if i >= len(f.runs) {
			continue
		}
		for _, r := range f.runs[i] {
			r.NotificationID = st.Notification.ID
			runs = append(runs, r)
		}
	}
	rec.Add(f.orgID, runs, f.stats, kept)
}
