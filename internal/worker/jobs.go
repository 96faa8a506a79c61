package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/mail"
	"github.com/perch-dev/perch/internal/netguard"
	"github.com/perch-dev/perch/internal/store"
)

// JobLease is how long a job's worker may take before another worker
// claims the job.
const JobLease = time.Minute

// The workflow worker's pace and bounds.
const (
	defaultPoll      = time.Second
	mailTimeout      = time.Minute // of one message
	jobBatch         = 20          // jobs claimed per tick
	jobConcurrency   = 4           // jobs carried out at once
	digestBatch      = 100         // digests delivered per tick
	digestLines      = 10          // held titles a summary lists
	maxSummaryTitle  = 200         // characters, as the receivers keep a title
	maxErrorBody     = 200         // bytes of a refusing receiver's answer kept in the job's error
	holdAgainTimeout = 30 * time.Second
)

// Tick is one pass of the workflow worker: it delivers the scheduled
// notifications that are due and the digests whose window ended, one
// summary notification each, carries out up to 20 due jobs (forwards
// and e-mail), 4 at a time, completing each one that succeeds and
// scheduling a retry of each one that fails, and mails the users whose
// unread mail is due (unread.go). A failed job is
// not an error of the tick; failing to reach the store, or to deliver a
// digest or a scheduled notification, is. Scheduled ones go first, so the
// jobs their workflows queued run in the same tick.
func (wk *Worker) Tick(ctx context.Context) error {
	return errors.Join(wk.deliverScheduled(ctx), wk.deliverDigests(ctx), wk.runJobs(ctx), wk.mailUnread(ctx))
}

// deliverDigests claims the due digests and delivers each.
func (wk *Worker) deliverDigests(ctx context.Context) error {
	due, err := wk.store.DueDigests(ctx, wk.now(), digestBatch)
	if err != nil {
		return fmt.Errorf("claiming due digests: %w", err)
	}
	var errs []error
	for _, d := range due {
		errs = append(errs, wk.deliverDigest(ctx, d))
	}
	return errors.Join(errs...)
}

// deliverDigest writes d's summary through ingest, so that it is stored and
// pushed like any other notification. The claim deleted d from the store:
// when the write fails, its notifications are held again under the same key
// for a millisecond, so that the next tick tries again (they join the
// key's newer digest instead, if one has started since).
func (wk *Worker) deliverDigest(ctx context.Context, d *store.Digest) error {
	if len(d.Notifications) == 0 {
		return nil // a digest starts with a notification held: never expected
	}
	if _, err := wk.ingest.Write(ctx, digestSummary(d)); err != nil {
		wk.holdAgain(ctx, d)
		return fmt.Errorf("delivering a digest of organisation %s: %w", d.OrgID, err)
	}
	return nil
}

// holdAgain puts back the notifications of a digest whose summary could
// not be written. Those beyond store.MaxDigestNotifications were only
// counted, and that count is not put back.
func (wk *Worker) holdAgain(ctx context.Context, d *store.Digest) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), holdAgainTimeout)
	defer cancel()
	for i, n := range d.Notifications {
		if _, err := wk.store.HoldForDigest(ctx, d.OrgID, d.Key, time.Millisecond, n, wk.now()); err != nil {
			wk.log.Error("holding a digest's notifications again failed; they are lost", "org", d.OrgID,
				"lost", len(d.Notifications)-i+d.More, "err", err)
			return
		}
	}
	if d.More > 0 {
		wk.log.Warn("a digest held again no longer counts the notifications beyond those it kept", "org", d.OrgID, "uncounted", d.More)
	}
}

// severityRank orders severities; an unknown one ranks as info.
var severityRank = map[string]int{perch.SeverityInfo: 0, perch.SeverityWarning: 1, perch.SeverityError: 2}

// digestSummary is the one notification that delivers d: "<count>
// notifications: <first title>", the first ten titles and how many more,
// the highest severity held, and the first notification's tab, source and
// scope (its URL only when every one held shares it). Its dedupe key names
// the digest's window, so a retried write never delivers it twice.
func digestSummary(d *store.Digest) store.NewNotification {
	first := d.Notifications[0]
	count := len(d.Notifications) + d.More
	severity, link := perch.SeverityInfo, first.URL
	lines := make([]string, 0, digestLines+1)
	for i, n := range d.Notifications {
		if severityRank[n.Severity] > severityRank[severity] {
			severity = n.Severity
		}
		if n.URL != link {
			link = ""
		}
		if i < digestLines {
			lines = append(lines, "• "+n.Title)
		}
	}
	if rest := count - len(lines); rest > 0 {
		lines = append(lines, "… and "+strconv.Itoa(rest)+" more")
	}
	noun := "notifications"
	if count == 1 {
		noun = "notification"
	}
	return store.NewNotification{
		DedupeKey: "digest|" + d.OrgID + "|" + d.Key + "|" + strconv.FormatInt(d.WindowEnd.UnixMilli(), 10),
		Notification: perch.Notification{
			Title:    clipRunes(fmt.Sprintf("%d %s: %s", count, noun, first.Title), maxSummaryTitle),
			Message:  strings.Join(lines, "\n"),
			Severity: severity,
			Tab:      first.Tab,
			Source:   first.Source,
			URL:      link,
			Scope:    first.Scope,
		},
	}
}

// clipRunes cuts s to at most n characters, the last of them "…" when cut.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)[:n-1]
	return strings.TrimSpace(string(runes)) + "…"
}

// runJobs claims due jobs and carries them out, jobConcurrency at a time.
func (wk *Worker) runJobs(ctx context.Context) error {
	jobs, err := wk.store.ClaimJobs(ctx, wk.now(), JobLease, jobBatch)
	if err != nil {
		return fmt.Errorf("claiming workflow jobs: %w", err)
	}
	if len(jobs) == 0 {
		return nil
	}
	// One client per tick: its connections are reused between the tick's
	// forwards and closed when it ends.
	client := wk.Guard().Client(perch.WorkflowForwardTimeout)
	defer client.CloseIdleConnections()
	errs := make([]error, len(jobs))
	slots := make(chan struct{}, jobConcurrency)
	var wg sync.WaitGroup
	for i, j := range jobs {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			errs[i] = wk.runJob(ctx, client, j)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runJob carries out j and records the outcome: done, or one more failure
// to retry later. Only failing to record it is an error. A job cut short
// because ctx ended (the instance is stopping) is left as it is: its lease
// ends and another worker takes it.
func (wk *Worker) runJob(ctx context.Context, client *http.Client, j store.Job) error {
	var err error
	switch j.Kind {
	case store.JobWorkflowForward:
		err = wk.forward(ctx, client, j)
	case store.JobWorkflowEmail:
		err = wk.emailJob(ctx, j)
	case store.JobBillingSeats:
		err = wk.syncSeats(ctx, j)
	default:
		err = fmt.Errorf("this version of Perch does not know jobs of kind %q", j.Kind)
	}
	if ctx.Err() != nil {
		return nil
	}
	if err == nil {
		if err := wk.store.CompleteJob(ctx, j.ID); err != nil && perch.ErrorCode(err) != perch.ENOTFOUND {
			return fmt.Errorf("completing job %s: %w", j.ID, err)
		}
		return nil
	}
	if ref, ok := errors.AsType[*refusal](err); ok {
		// The guard refuses the address itself: every retry would be
		// refused the same way, so the job is given up now, marked so.
		rerr := wk.store.RefuseJob(ctx, j.ID, ref.Error(), wk.now())
		switch {
		case rerr != nil && perch.ErrorCode(rerr) == perch.ENOTFOUND:
			return nil
		case rerr != nil:
			return fmt.Errorf("recording the refusal of job %s (%s): %w", j.ID, err, rerr)
		}
		wk.log.Warn("a workflow forward was refused by the SSRF guard; it is not retried", "job", j.ID, "org", j.OrgID, "err", err)
		return nil
	}
	gaveUp, rerr := wk.store.RetryJob(ctx, j.ID, err.Error(), wk.now())
	switch {
	case rerr != nil && perch.ErrorCode(rerr) == perch.ENOTFOUND:
		return nil // done by a worker that took it after its lease ended
	case rerr != nil:
		return fmt.Errorf("recording the failure of job %s (%s): %w", j.ID, err, rerr)
	case gaveUp:
		wk.log.Warn("a job was given up after failing for "+perch.WorkflowRetryFor.String(),
			"job", j.ID, "org", j.OrgID, "kind", j.Kind, "attempts", j.Attempts+1, "err", err)
	default:
		wk.log.Info("a job failed; it will be retried", "job", j.ID, "org", j.OrgID, "kind", j.Kind,
			"attempts", j.Attempts+1, "err", err)
	}
	return nil
}

// forward POSTs the notification of a forward job to its URL, as the API
// writes notifications, through the SSRF guard, signed when the step has a
// secret. A 2xx answer is success; anything else is a failure whose text
// says why (a refused address, no answer in time, the status and the start
// of the body).
func (wk *Worker) forward(ctx context.Context, client *http.Client, j store.Job) error {
	var p ForwardJob
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return fmt.Errorf("the forward job cannot be read: %v", err)
	}
	body, err := json.Marshal(p.Notification)
	if err != nil {
		return fmt.Errorf("the notification cannot be written as JSON: %v", err)
	}
	secret, err := OpenSecret(wk.opts.Secrets, p.Secret)
	if err != nil {
		return fmt.Errorf("the forward's secret cannot be read: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil || req.URL.Scheme != "http" && req.URL.Scheme != "https" || req.URL.Host == "" {
		return errors.New("the forward URL is not an http(s) URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Perch-Workflow/1")
	req.Header.Set("X-Perch-Workflow", p.WorkflowID)
	req.Header.Set("X-Perch-Delivery", j.ID)
	if secret != "" {
		req.Header.Set("X-Perch-Signature", netguard.Sign(secret, body, wk.now()))
	}
	res, err := client.Do(req)
	if err != nil {
		return forwardError(err)
	}
	defer res.Body.Close()
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10)) // lets the connection be reused
		return nil
	}
	head, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody+utf8.UTFMax))
	text := strings.Join(strings.Fields(strings.ToValidUTF8(string(head), "\uFFFD")), " ")
	if len(text) > maxErrorBody {
		text = text[:maxErrorBody]
		for !utf8.ValidString(text) {
			text = text[:len(text)-1]
		}
		text += "…"
	}
	if text == "" {
		return fmt.Errorf("the receiver answered %s", res.Status)
	}
	return fmt.Errorf("the receiver answered %s: %s", res.Status, text)
}

// forwardError says why a forward got no answer, without its URL (which
// may carry a token the organisation would not show on the runs page).
func forwardError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	switch {
	case errors.Is(err, netguard.ErrRefused):
		reason := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "netguard: "), "address refused: ")
		return &refusal{reason: reason}
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Errorf("the receiver did not answer within %s", perch.WorkflowForwardTimeout)
	}
	return fmt.Errorf("the forward failed: %v", err)
}

// refusal is the error of a forward the SSRF guard refused: the job is
// given up at once (store.RefuseJob), not retried.
type refusal struct {
	reason string // the guard's, such as "127.0.0.1 is loopback"
}

func (r *refusal) Error() string {
	return "refused by the address guard: " + r.reason + "; Perch does not reach loopback, private, link-local or " +
		"metadata addresses unless PERCH_WORKFLOW_ALLOW_PRIVATE is set"
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	t, ok := errors.AsType[interface {
		error
		Timeout() bool
	}](err)
	return ok && t.Timeout()
}

// emailJob mails the notification of an e-mail job to each of its
// recipients, one message each. A send that fails fails the job, and the
// retry mails every recipient again.
func (wk *Worker) emailJob(ctx context.Context, j store.Job) error {
	var p EmailJob
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return fmt.Errorf("the e-mail job cannot be read: %v", err)
	}
	if wk.mailer == nil {
		return errors.New("no mailer is configured")
	}
	to, err := wk.workflowRecipients(ctx, j.OrgID, p.To)
	if err != nil {
		return err
	}
	name := p.WorkflowID
	if w, err := wk.store.Workflow(ctx, j.OrgID, p.WorkflowID); err == nil {
		name = w.Name
	} // a workflow deleted since is named by its id
	n := p.Notification
	link := n.URL
	if link == "" || !perch.ValidURL(link) { // the rule of every notification's link
		link = wk.opts.BaseURL
	}
	var failed []string
	var last error
	for _, addr := range to {
		sendCtx, cancel := context.WithTimeout(ctx, mailTimeout)
		err := wk.mailer.Send(sendCtx, mail.WorkflowNotification(addr, n.Title, n.Message, n.Severity, n.Source, link, name))
		cancel()
		if err != nil {
			failed, last = append(failed, addr), err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("mail to %d of %d recipients failed (%s): %v", len(failed), len(to), strings.Join(failed, ", "), last)
	}
	return nil
}

// workflowRecipients are the addresses an e-mail step's to means in orgID:
// "owners", "admins" (owners and admins) or the members of one of its
// teams; only enabled accounts, each address once.
func (wk *Worker) workflowRecipients(ctx context.Context, orgID, to string) ([]string, error) {
	active, err := wk.activeMembers(ctx, orgID)
	if err != nil {
		return nil, fmt.Errorf("finding the recipients: %w", err)
	}
	var ids []string
	switch to {
	case "owners", "admins":
		for id, u := range active {
			if u.Role == perch.RoleOwner || to == "admins" && u.Role == perch.RoleAdmin {
				ids = append(ids, id)
			}
		}
	default:
		team, err := wk.store.Team(ctx, orgID, to)
		if perch.ErrorCode(err) == perch.ENOTFOUND {
			return nil, fmt.Errorf("the team %s the e-mail step names is not in the organisation (any more)", to)
		}
		if err != nil {
			return nil, fmt.Errorf("finding the recipients: %w", err)
		}
		for _, m := range team.Members {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		u := active[id]
		if u == nil || u.Email == "" || seen[strings.ToLower(u.Email)] {
			continue
		}
		seen[strings.ToLower(u.Email)] = true
		out = append(out, u.Email)
	}
	return out, nil
}

// activeMembers are orgID's enabled accounts by id.
func (wk *Worker) activeMembers(ctx context.Context, orgID string) (map[string]*store.SCIMUser, error) {
	const page = 500
	out := map[string]*store.SCIMUser{}
	enabled := []store.SCIMCondition{{Field: store.SCIMActive, Bool: true}}
	for offset := 0; ; offset += page {
		users, total, err := wk.store.SCIMUsers(ctx, orgID, enabled, offset, page)
		if err != nil {
			return nil, err
		}
		for _, u := range users {
			out[u.ID] = u
		}
		if len(users) == 0 || offset+len(users) >= total {
			return out, nil
		}
	}
}
