// Package ingest stores accepted events and hands them to fan-out. One
// goroutine does the writing: it gathers whatever deliveries are waiting into
// one transaction (group commit), answers each caller once that transaction
// has committed, and then publishes the new notifications in id order.
// Concurrency thus costs fewer transactions, not more, and fan-out order is
// commit order.
//
// Under concurrent load the writer also lingers a little before a commit
// (at most maxLinger), until the transaction holds half as many deliveries
// as were recently seen waiting at once: a transaction's fixed cost (on
// SQLite, most of it) is then shared by a dozen deliveries instead of a
// handful, while the other half are being received, so that receiving and
// committing still overlap. A delivery that finds no concurrency never
// waits.
package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
)

// MaxBatch bounds how many notifications share one transaction.
const MaxBatch = 256

// maxLinger bounds how long a commit waits for more deliveries.
const maxLinger = time.Millisecond

// ErrStopped is returned for writes after the writer stopped.
var ErrStopped = errors.New("ingest: writer stopped")

// Writer is the group-commit writer. Create it with New and run it with Run.
type Writer struct {
	store  *store.Store
	fanout perch.Fanout
	log    *slog.Logger
	reqs   chan *request
	done   chan struct{}

	// after is time.After; tests replace it to decide when lingering ends.
	after func(time.Duration) <-chan time.Time

	transactions, notifications atomic.Int64

	// Owned by the Run goroutine.
	gathered []*request              // commit's requests, kept for the next commit
	batch    []store.NewNotification // their notifications, likewise
	brokenAt time.Time               // when publishing last failed
	// concurrency is the most deliveries recently seen waiting on the
	// writer at once (in a transaction and queued behind it as it ended,
	// before they are answered); it holds for concurrencyWindow
	// transactions, or until a linger finds fewer.
	concurrency, concurrencyAge int
}

// concurrencyWindow is how many transactions a peak of concurrency is
// remembered for without being seen again.
const concurrencyWindow = 64

// Publishing limits: one attempt may take publishTimeout; after a failure,
// batches go unpublished for publishPause (they are stored; see publish).
const (
	publishTimeout = 500 * time.Millisecond
	publishPause   = time.Second
)

type request struct {
	batch []store.NewNotification
	reply chan reply
}

// requests keeps answered requests, with their reply channels, for reuse.
var requests = sync.Pool{New: func() any { return &request{reply: make(chan reply, 1)} }}

type reply struct {
	stored []store.Stored
	err    error
}

// New returns a writer that stores into st and publishes to f.
func New(st *store.Store, f perch.Fanout, logger *slog.Logger) *Writer {
	return &Writer{store: st, fanout: f, log: logger, reqs: make(chan *request, MaxBatch), done: make(chan struct{}), after: time.After}
}

// Stats reports how many transactions the writer has committed and how many
// notifications they stored: their ratio is how well group commit is working.
func (w *Writer) Stats() (transactions, notifications int64) {
	return w.transactions.Load(), w.notifications.Load()
}

// Write stores the notifications (in one transaction with whatever else is
// waiting) and returns them with their ids once committed. A notification
// whose DedupeKey was stored before comes back marked Duplicate and is not
// published again. Write first makes the text of batch, in place, what every
// database stores and every client shows (see storable).
func (w *Writer) Write(ctx context.Context, batch ...store.NewNotification) ([]store.Stored, error) {
	for i := range batch {
		storable(&batch[i])
	}
	r := requests.Get().(*request)
	r.batch = batch
	// The queue is seldom full: try it before waiting on the caller's
	// context as well, which would cost every request a channel.
	select {
	case w.reqs <- r:
	default:
		select {
		case w.reqs <- r:
		case <-w.done:
			return nil, ErrStopped
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case rep := <-r.reply:
		r.batch = nil
		requests.Put(r) // answered: Run is done with it
		return rep.stored, rep.err
	case <-w.done:
		// Run answers everything it took before it returns; a request it did
		// not take is answered here.
		select {
		case rep := <-r.reply:
			return rep.stored, rep.err
		default:
			return nil, ErrStopped
		}
	}
}

// Run writes until ctx ends, then answers what is still queued and returns.
func (w *Writer) Run(ctx context.Context) {
	defer close(w.done)
	for {
		select {
		case r := <-w.reqs:
			w.commit(r)
		case <-ctx.Done():
			for {
				select {
				case r := <-w.reqs:
					w.commit(r)
				default:
					return
				}
			}
		}
	}
}

// commit writes first and every request waiting behind it, up to MaxBatch
// notifications, in one transaction. When fewer than half the recent
// concurrency are waiting, it lingers for more (at most maxLinger): with
// 32 senders, say, one transaction of 16 commits while the other 16
// deliveries are being received, instead of transactions of a few each.
// Lingering for all of them would leave the receivers idle while the
// writer commits, and lingering when nothing else is coming (one sender)
// would only add latency; half does neither.
func (w *Writer) commit(first *request) {
	reqs := append(w.gathered[:0], first)
	n := len(first.batch)
	target := (w.concurrency + 1) / 2
	var linger <-chan time.Time
	timedOut := false
gather:
	for n < MaxBatch {
		var r *request
		select {
		case r = <-w.reqs: // what is waiting already costs no wait
		default:
			if len(reqs) >= target {
				break gather
			}
			if linger == nil {
				linger = w.after(maxLinger)
			}
			select {
			case r = <-w.reqs:
			case <-linger:
				timedOut = true
				break gather
			}
		}
		reqs = append(reqs, r)
		n += len(r.batch)
	}
	all := w.batch[:0]
	for _, r := range reqs {
		all = append(all, r.batch...)
	}
	// Both are kept for the next commit, emptied so that they hold on to
	// nothing: the store copies what it returns.
	defer func() { w.gathered, w.batch = clearAll(reqs), clearAll(all) }()
	// The transaction must not die with one caller's request: the context
	// of a writer is its own. Publishing happens inside InsertNotifications,
	// in commit order across every instance (see store.InsertNotifications);
	// callers are answered after that.
	stored, err := w.store.InsertNotifications(context.Background(), all, w.publish)
	if err != nil {
		w.log.Error("storing notifications failed", "count", len(all), "err", err)
	} else {
		w.transactions.Add(1)
		w.notifications.Add(int64(len(all)))
	}
	w.observe(len(reqs)+len(w.reqs), timedOut)
	i := 0
	for _, r := range reqs {
		if err != nil {
			r.reply <- reply{err: err}
			continue
		}
		// The reply hands r back to its caller, who may reuse it at once.
		n := len(r.batch)
		r.reply <- reply{stored: stored[i : i+n]}
		i += n
	}
}

// observe records how many deliveries were waiting on the writer at once as
// a transaction ended: those in it and those queued behind it. A linger
// that ran out found the load lower than the peak remembered: what it saw
// replaces that peak at once.
func (w *Writer) observe(waiting int, timedOut bool) {
	w.concurrencyAge++
	if waiting >= w.concurrency || timedOut || w.concurrencyAge >= concurrencyWindow {
		w.concurrency, w.concurrencyAge = waiting, 0
	}
}

// publish hands newly stored notifications to fan-out, quickly: it runs
// while every instance's writer waits for the order lock. Neither fan-out
// Perch runs fails here: in-process (one instance) it cannot, and across
// instances (internal/feed) a notification's publish only wakes readers of
// the store, which is the log they deliver from. A fan-out that did fail
// would leave the notification stored and served by ?since= replay; after
// a failure, publishing pauses for a moment rather than time out on every
// batch.
func (w *Writer) publish(stored []store.Stored) {
	if !w.brokenAt.IsZero() && time.Since(w.brokenAt) < publishPause {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	for i := range stored {
		if stored[i].Duplicate {
			continue
		}
		// Shared, not copied: nothing changes a stored notification.
		n := &stored[i].Notification
		if err := w.fanout.Publish(ctx, perch.FanoutMessage{Kind: perch.FanoutNotification, Notification: n}); err != nil {
			w.log.Warn("publishing a notification failed; clients get it when they replay from the store", "id", n.ID, "err", err)
			w.brokenAt = time.Now()
			return
		}
	}
	w.brokenAt = time.Time{}
}

// maxDedupeKey bounds a stored dedupe key, in bytes. A PostgreSQL index
// entry must fit in about a third of a page (2,704 bytes): one longer key
// would fail its whole transaction.
const maxDedupeKey = 512

// storable cleans a notification's text with perch.CleanText, for whatever
// wrote it: one row that PostgreSQL refuses (a NUL, invalid UTF-8, a key too
// long to index) would fail the transaction of every delivery that shares
// it. The parsers of internal/senders already clean what they take from
// payloads, and the inbound receiver refuses what a person should fix, so
// this seldom changes anything; it is the one place that guarantees it.
// A key too long is replaced by its SHA-256, which keeps redeliveries of
// it apart from other keys and equal to each other. A link that
// perch.ValidURL refuses is dropped: the receivers and workflows keep to
// that rule already, and this guards whatever writes next.
func storable(nn *store.NewNotification) {
	n := &nn.Notification
	n.Tab = perch.CleanText(n.Tab, perch.SingleLine)
	n.Title = perch.CleanText(n.Title, perch.SingleLine)
	n.Message = perch.CleanText(n.Message, perch.MultiLine)
	if n.URL = perch.CleanText(n.URL, perch.SingleLine); !perch.ValidURL(n.URL) {
		n.URL = ""
	}
	if len(n.Tags) > 0 || n.Icon != "" || len(n.Actions) > 0 {
		storableExtras(n)
	}
	nn.DedupeKey = perch.CleanText(nn.DedupeKey, perch.SingleLine)
	if len(nn.DedupeKey) > maxDedupeKey {
		sum := sha256.Sum256([]byte(nn.DedupeKey))
		nn.DedupeKey = "sha256:" + hex.EncodeToString(sum[:])
	}
}

// storableExtras is storable for the rich fields: tags and labels cleaned
// (at most perch.MaxTags and perch.MaxActions kept), an icon that is not
// https dropped, and a view action whose link perch.ValidURL refuses
// dropped with it.
func storableExtras(n *perch.Notification) {
	n.Tags = n.Tags[:min(len(n.Tags), perch.MaxTags)]
	for i, t := range n.Tags {
		n.Tags[i] = perch.CleanText(t, perch.SingleLine)
	}
	if !perch.ValidURL(n.Icon) || !strings.HasPrefix(n.Icon, "https://") {
		n.Icon = ""
	}
	kept := n.Actions[:0]
	for _, a := range n.Actions[:min(len(n.Actions), perch.MaxActions)] {
		a.Label = perch.CleanText(a.Label, perch.SingleLine)
		if a.Type == perch.ActionView && (a.URL == "" || !perch.ValidURL(a.URL)) {
			continue
		}
		kept = append(kept, a)
	}
	n.Actions = kept
	if len(n.Actions) == 0 {
		n.Actions = nil
	}
}

// clearAll zeroes s and returns it empty, its capacity kept.
func clearAll[T any](s []T) []T {
	clear(s)
	return s[:0]
}
