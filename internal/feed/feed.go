// Package feed is the fan-out of many instances: the store is the log and
// pub/sub only a wake-up. Each instance delivers what happened on any
// instance by reading the store's two logs (the notifications table, and
// the fan-out log of everything else: read receipts, changes of grants,
// revocations, cache drops) in id order from where it last read. It reads
// when woken (at once by its own writes, by a wake-up that another
// instance publishes through the transport, Redis) and, when no wake-up
// comes, every poll interval. A lost wake-up therefore delays delivery by
// at most the interval and never skips anything; the instance that stored
// a notification serves its own clients at once, whether or not the
// transport answers; and no missed-message bookkeeping is needed.
//
// Both logs become visible in id order (see internal/store), so a reader
// that has read up to id n never later finds a smaller id it has not read,
// and every subscriber gets everything once, in order.
package feed

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
)

// DefaultPoll is how often a subscriber reads the logs when no wake-up
// comes: the most a lost wake-up delays delivery.
const DefaultPoll = 500 * time.Millisecond

// page is how many entries of a log one read takes; a full page is
// followed by another read at once.
const page = 512

// Log is what a Feed reads and writes: *store.Store.
type Log interface {
	NotificationsAfter(ctx context.Context, after int64, limit int) ([]perch.Notification, error)
	FanoutAfter(ctx context.Context, after int64, limit int) ([]store.LoggedMessage, error)
	AppendFanout(ctx context.Context, m perch.FanoutMessage) (int64, error)
	LogHeads(ctx context.Context) (store.LogHeads, error)
}

// Feed is a perch.Fanout over the store's logs. Publishing a notification
// announces a row already committed (the ingest writer publishes after the
// commit); any other message is appended to the fan-out log. Either way
// every subscriber, on every instance, is woken.
type Feed struct {
	log       Log
	transport perch.Fanout // carries wake-ups between instances; nil: poll alone
	poll      time.Duration
	logger    *slog.Logger

	mu   sync.Mutex
	subs map[*subscriber]struct{}

	remote chan struct{} // a wake-up for the other instances is due
	stop   chan struct{} // ends the goroutine that sends them; nil while none runs

	wakeMu  sync.Mutex
	wakeErr error // the last wake-up's failure to send; nil once one is sent
}

var _ perch.Fanout = (*Feed)(nil)

// New returns a Feed over log, woken across instances through transport
// (nil: reading every poll interval is the only way news from other
// instances arrives), reading every poll interval when no wake-up comes
// (0: DefaultPoll). Problems with no caller to return to are logged to
// logger.
func New(log Log, transport perch.Fanout, poll time.Duration, logger *slog.Logger) *Feed {
	if poll <= 0 {
		poll = DefaultPoll
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Feed{log: log, transport: transport, poll: poll, logger: logger,
		subs: map[*subscriber]struct{}{}, remote: make(chan struct{}, 1)}
}

// Publish announces m. A notification is one the store holds already: its
// subscribers read it from there. Anything else is appended to the fan-out
// log first, and its error returned. Then every subscriber, here and on
// the other instances, is woken; a wake-up that cannot be sent to the
// others costs them at most the poll interval.
func (f *Feed) Publish(ctx context.Context, m perch.FanoutMessage) error {
	if m.Kind != perch.FanoutNotification {
		if _, err := f.log.AppendFanout(ctx, m); err != nil {
			return err
		}
	}
	f.wakeLocal()
	select {
	case f.remote <- struct{}{}:
	default: // one is due already
	}
	return nil
}

// WakeupHealth says whether wake-ups reach the other instances: the last
// one's failure to send, nil once one is sent (or none was tried). While
// it fails, the others read every poll interval.
func (f *Feed) WakeupHealth() error {
	f.wakeMu.Lock()
	defer f.wakeMu.Unlock()
	return f.wakeErr
}

// Subscribe calls deliver with every notification stored and every message
// published from now on, on any instance, in the order of each log, from a
// single goroutine, until ctx ends. It returns once the subscription is in
// place. lost is called when the subscriber fell so far behind that
// retention pruned notifications it had not read (its clients must catch
// up from the store, and learn of the gap there).
func (f *Feed) Subscribe(ctx context.Context, deliver func(perch.FanoutMessage), lost func()) error {
	heads, err := f.log.LogHeads(ctx)
	if err != nil {
		return err
	}
	if f.transport != nil {
		// Any message on the transport is a wake-up; so is a subscription
		// made again, after which messages may have been missed.
		wake := func() { f.wakeLocal() }
		if err := f.transport.Subscribe(ctx, func(perch.FanoutMessage) { wake() }, wake); err != nil {
			return err
		}
	}
	s := &subscriber{wake: make(chan struct{}, 1), notifications: heads.Notifications, fanout: heads.Fanout,
		deliver: deliver, lost: lost}
	f.mu.Lock()
	f.subs[s] = struct{}{}
	if f.stop == nil { // the first subscriber: wake-ups go out while any is left
		f.stop = make(chan struct{})
		go f.sendWakeups(f.stop)
	}
	f.mu.Unlock()
	go func() {
		defer func() {
			f.mu.Lock()
			delete(f.subs, s)
			if len(f.subs) == 0 {
				close(f.stop)
				f.stop = nil
			}
			f.mu.Unlock()
		}()
		f.run(ctx, s)
	}()
	return nil
}

// subscriber is one Subscribe: where it has read each log up to.
type subscriber struct {
	wake                  chan struct{}
	notifications, fanout int64
	deliver               func(perch.FanoutMessage)
	lost                  func()
	failing               bool // the last read failed (logged once until one works)
}

// wakeLocal wakes every subscriber of this process.
func (f *Feed) wakeLocal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		select {
		case s.wake <- struct{}{}:
		default: // woken already
		}
	}
}

// sendWakeups sends the wake-ups Publish asks for to the other instances,
// one for any number asked for while the last was being sent, so that the
// transport is never on a writer's path (the ingest writer publishes while
// it holds the cluster's order lock), until stop is closed.
func (f *Feed) sendWakeups(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-f.remote:
		}
		if f.transport == nil {
			continue
		}
		sctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		err := f.transport.Publish(sctx, perch.FanoutMessage{Kind: perch.FanoutWake})
		cancel()
		f.wakeMu.Lock()
		if err != nil && f.wakeErr == nil {
			f.logger.Warn("sending a wake-up to the other instances failed; they read the store every poll interval until it works again",
				"poll", f.poll, "err", err)
		} else if err == nil && f.wakeErr != nil {
			f.logger.Info("wake-ups reach the other instances again")
		}
		f.wakeErr = err
		f.wakeMu.Unlock()
	}
}

// sendTimeout bounds one wake-up's send.
const sendTimeout = time.Second

// run reads the logs for s whenever it is woken or the poll interval
// passes, until ctx ends.
func (f *Feed) run(ctx context.Context, s *subscriber) {
	t := time.NewTimer(f.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-t.C:
		}
		f.catchUp(ctx, s)
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(f.poll)
	}
}

// catchUp delivers to s everything both logs hold after where it read,
// page by page.
func (f *Feed) catchUp(ctx context.Context, s *subscriber) {
	for ctx.Err() == nil {
		n, err := f.readNotifications(ctx, s)
		var c int
		if err == nil {
			c, err = f.readFanout(ctx, s)
		}
		if err != nil {
			if !s.failing && ctx.Err() == nil {
				f.logger.Warn("reading the delivery log failed; trying again at the next wake-up or poll", "err", err)
			}
			s.failing = true
			return
		}
		if s.failing {
			f.logger.Info("reading the delivery log works again")
			s.failing = false
		}
		if n < page && c < page {
			return
		}
	}
}

func (f *Feed) readNotifications(ctx context.Context, s *subscriber) (int, error) {
	ns, err := f.log.NotificationsAfter(ctx, s.notifications, page)
	if err != nil || len(ns) == 0 {
		return 0, err
	}
	first, err := strconv.ParseInt(ns[0].ID, 10, 64)
	if err != nil {
		return 0, err
	}
	if first > s.notifications+1 {
		// Ids skip (a redelivery's id goes unused on PostgreSQL), so a jump
		// is no proof of loss: only retention's high-water mark is.
		if heads, err := f.log.LogHeads(ctx); err == nil && heads.PrunedThrough > s.notifications && s.lost != nil {
			s.lost()
		}
	}
	for i := range ns {
		id, err := strconv.ParseInt(ns[i].ID, 10, 64)
		if err != nil {
			return i, err
		}
		s.deliver(perch.FanoutMessage{Kind: perch.FanoutNotification, Notification: &ns[i]})
		s.notifications = id
	}
	return len(ns), nil
}

func (f *Feed) readFanout(ctx context.Context, s *subscriber) (int, error) {
	es, err := f.log.FanoutAfter(ctx, s.fanout, page)
	if err != nil {
		return 0, err
	}
	for _, e := range es {
		s.deliver(e.Message)
		s.fanout = e.ID
	}
	return len(es), nil
}
