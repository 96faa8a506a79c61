// Package worker is Perch's background work: the scheduled notifications
// that came due, the workflows' queued jobs
// (forwards through internal/netguard and e-mail), the seats of the
// organisations' provider subscriptions (set to their member counts), the
// digests whose window ended, and the recording of workflow runs in
// batches. perch serve starts
// a Worker beside ingest.Writer and joins it at shutdown; the HTTP server
// queues jobs (through the store, with the notifications that made them)
// and wakes it.
package worker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/billing"
	"github.com/perch-dev/perch/internal/ingest"
	"github.com/perch-dev/perch/internal/mail"
	"github.com/perch-dev/perch/internal/netguard"
	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/store"
)

// Options are a Worker's dependencies and settings.
type Options struct {
	Store  *store.Store
	Ingest *ingest.Writer // stores and publishes the digests' summaries
	Mailer mail.Sender    // sends e-mail jobs; nil: they fail, and are retried
	// Secrets opens the forwards' sealed secrets (SealSecret).
	Secrets *secrets.Box
	Logger  *slog.Logger
	// BaseURL is the link of mailed notifications that have none.
	BaseURL string
	// AllowPrivate lets forwards reach loopback, private, link-local and
	// metadata addresses (PERCH_WORKFLOW_ALLOW_PRIVATE); tests set it to
	// reach their loopback listeners.
	AllowPrivate bool
	// Resolver resolves the forwards' hosts; nil: the system's. Tests stub
	// it.
	Resolver netguard.Resolver
	// Poll is how often Run looks for due digests and jobs when nothing
	// wakes it; 0 means the default, 1 s.
	Poll time.Duration
	// Now is the worker's clock; nil means time.Now.
	Now func() time.Time
	// Billing is the payment provider whose subscriptions' seats the
	// worker keeps in step (store.JobBillingSeats); nil is billing off.
	Billing billing.Provider
}

// Worker carries out the workflows' background work. Every instance runs
// one: the store hands each digest and job to one of them.
type Worker struct {
	opts   Options
	store  *store.Store
	log    *slog.Logger
	ingest *ingest.Writer
	mailer mail.Sender
	now    func() time.Time
	wake   chan struct{} // Wake's signal to Run
}

// New returns a Worker; Run runs it.
func New(o Options) *Worker {
	if o.Poll <= 0 {
		o.Poll = defaultPoll
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Worker{opts: o, store: o.Store, log: o.Logger, ingest: o.Ingest, mailer: o.Mailer, now: o.Now, wake: make(chan struct{}, 1)}
}

// Wake has the worker look for work now rather than at its next poll:
// ingest calls it after queueing jobs. It never blocks; a wake already
// pending covers this one. A nil Worker ignores it.
func (wk *Worker) Wake() {
	if wk == nil {
		return
	}
	select {
	case wk.wake <- struct{}{}:
	default:
	}
}

// Run carries out the workflows' background work (Tick) when woken, every
// Options.Poll, and when the next scheduled notification is due, until ctx
// ends. Errors are logged; the worker keeps
// going.
func (wk *Worker) Run(ctx context.Context) {
	t := time.NewTicker(wk.opts.Poll)
	defer t.Stop()
	due := time.NewTimer(wk.opts.Poll) // the next scheduled notification's time (armScheduled)
	defer due.Stop()
	wk.armScheduled(ctx, due)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wk.wake:
		case <-due.C:
		}
		if err := wk.Tick(ctx); err != nil && ctx.Err() == nil {
			wk.log.Error("the workflow worker failed; it tries again at its next tick", "err", err)
		}
		wk.armScheduled(ctx, due)
	}
}

// Queued work of workflows (store.Job payloads): carried out by the
// worker after the notification is stored.
type (
	// ForwardJob POSTs Notification to URL, signed with the secret.
	ForwardJob struct {
		WorkflowID   string             `json:"workflow_id"`
		Notification perch.Notification `json:"notification"`
		URL          string             `json:"url"`
		Secret       string             `json:"secret,omitempty"` // sealed, as the workflow keeps it (SealSecret)
	}
	// EmailJob mails Notification to To: "owners", "admins" or a team id.
	EmailJob struct {
		WorkflowID   string             `json:"workflow_id"`
		Notification perch.Notification `json:"notification"`
		To           string             `json:"to"`
	}
)

// Describe reads from a job's payload the title of the notification it
// carries and where it goes: a forward's scheme and host (its path and
// query may hold a token, and its user info a password), an e-mail's
// "owners", "admins" or team id. A payload that cannot be read (a
// delivered job's, cleared) answers "".
func Describe(j store.Job) (title, target string) {
	var p struct {
		Notification struct {
			Title string `json:"title"`
		} `json:"notification"`
		URL string `json:"url"`
		To  string `json:"to"`
	}
	if json.Unmarshal(j.Payload, &p) != nil {
		return "", ""
	}
	target = p.To
	if j.Kind == store.JobWorkflowForward {
		target = ""
		if u, err := url.Parse(p.URL); err == nil && u.Host != "" {
			target = u.Scheme + "://" + u.Host
		}
	}
	return p.Notification.Title, target
}

// SealedPrefix marks a forward secret sealed with the server's key.
const SealedPrefix = "sealed:"

// ErrNoSecretKey is the error of sealing or opening a secret on a server
// that has no key.
var ErrNoSecretKey = perch.Errorf(perch.EUNAVAILABLE,
	"This server has no secret key to encrypt secrets with: set PERCH_SECRET_KEY (32 random bytes in base64, e.g. the output of openssl rand -base64 32) and restart it.")

// SealSecret seals a forward step's secret for the database: workflows and
// queued jobs keep it only in this form, and the API never shows it.
func SealSecret(box *secrets.Box, plain string) (string, error) {
	if plain == "" || strings.HasPrefix(plain, SealedPrefix) {
		return plain, nil
	}
	if box == nil {
		return "", ErrNoSecretKey
	}
	return SealedPrefix + base64.RawStdEncoding.EncodeToString(box.Seal([]byte(plain))), nil
}

// OpenSecret reads back what SealSecret made.
func OpenSecret(box *secrets.Box, stored string) (string, error) {
	if stored == "" {
		return "", nil
	}
	enc, ok := strings.CutPrefix(stored, SealedPrefix)
	if !ok {
		return "", errors.New("the forward secret is not sealed")
	}
	if box == nil {
		return "", ErrNoSecretKey
	}
	raw, err := base64.RawStdEncoding.DecodeString(enc)
	if err != nil {
		return "", err
	}
	plain, err := box.Open(raw)
	return string(plain), err
}

// Guard is the SSRF guard of the worker's forwards, which every outbound
// call to a URL an organisation's members or senders chose goes through
// (the notifications' http actions too): it refuses private addresses
// unless PERCH_WORKFLOW_ALLOW_PRIVATE allows them, and resolves with the
// worker's Resolver. A nil Worker's guard refuses them.
func (wk *Worker) Guard() *netguard.Guard {
	if wk == nil {
		return &netguard.Guard{}
	}
	return &netguard.Guard{AllowPrivate: wk.opts.AllowPrivate, Resolver: wk.opts.Resolver}
}

// AllowsPrivate reports whether this worker's forwards may reach loopback,
// private, link-local and metadata addresses (PERCH_WORKFLOW_ALLOW_PRIVATE):
// a refused delivery may be retried only then. A nil Worker does not.
func (wk *Worker) AllowsPrivate() bool { return wk != nil && wk.opts.AllowPrivate }
