package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/perch-dev/perch"
)

// Timings of a Redis subscription.
const (
	// pingAfter is how long a quiet subscription waits before it pings, and
	// pongWait how long it then waits for anything at all before it takes
	// the connection for dead: a peer gone without closing the socket (a
	// failed-over host, a NAT that forgot us) sends no error to read.
	pingAfter = 30 * time.Second
	pongWait  = 5 * time.Second
	// confirmWait bounds the wait for Redis to confirm a SUBSCRIBE.
	confirmWait = 10 * time.Second
	// Resubscribing backs off from minBackoff, doubling up to maxBackoff.
	minBackoff = 50 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Redis is the Fanout of many instances: messages are published, JSON
// encoded, on one Redis pub/sub channel that every instance subscribes to.
//
// Redis pub/sub is at most once: messages published while a subscriber's
// connection is broken are gone, and Redis itself disconnects a subscriber
// that reads too slowly (client-output-buffer-limit pubsub). Either way the
// subscription is made again and lost is called.
type Redis struct {
	client  *redis.Client
	channel string
	log     *slog.Logger

	pingAfter, pongWait time.Duration // the consts; shorter in tests
}

var _ perch.Fanout = (*Redis)(nil)

// NewRedis returns a Redis fan-out on channel. Every instance must use the
// same channel. Problems that have no caller to return to (a broken
// subscription, an undecodable message) are logged to log, when given, or
// else to slog.Default().
func NewRedis(client *redis.Client, channel string, log ...*slog.Logger) *Redis {
	r := &Redis{
		client:    client,
		channel:   channel,
		log:       slog.Default(),
		pingAfter: pingAfter,
		pongWait:  pongWait,
	}
	if len(log) > 0 && log[0] != nil {
		r.log = log[0]
	}
	return r
}

// Publish sends m to every subscriber of the channel, on every instance. It
// returns once Redis has accepted m, so messages published one after the
// other arrive in that order. The wait is bounded by ctx and by the client's
// dial and read timeouts.
func (r *Redis) Publish(ctx context.Context, m perch.FanoutMessage) error {
	payload, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("fanout: encode %s message: %w", m.Kind, err)
	}
	if err := r.client.Publish(ctx, r.channel, payload).Err(); err != nil {
		return fmt.Errorf("fanout: publish on redis channel %s: %w", r.channel, err)
	}
	return nil
}

// Subscribe subscribes to the channel on a connection of its own and returns
// once Redis has confirmed it, or with the error that prevented it. A
// goroutine then calls deliver with each message until ctx ends. When the
// connection breaks, it subscribes again, backing off while Redis is
// unreachable, and calls lost once subscribed.
func (r *Redis) Subscribe(ctx context.Context, deliver func(perch.FanoutMessage), lost func()) error {
	ps, err := r.subscribe(ctx)
	if err != nil {
		return err
	}
	go r.run(ctx, ps, deliver, lost)
	return nil
}

// subscribe opens a PubSub on the channel and waits for Redis to confirm it.
func (r *Redis) subscribe(ctx context.Context) (*redis.PubSub, error) {
	// Subscribe with no channel, then PubSub.Subscribe: Client.Subscribe
	// discards the error of the SUBSCRIBE it sends.
	ps := r.client.Subscribe(ctx)
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	err := ps.Subscribe(ctx, r.channel)
	if err == nil {
		// PubSub.Subscribe only writes SUBSCRIBE; until the confirmation
		// is read, messages published may not reach us.
		err = r.confirm(ctx, ps)
	}
	if err != nil {
		ps.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("fanout: subscribe to redis channel %s: %w", r.channel, err)
	}
	return ps, nil
}

func (r *Redis) confirm(ctx context.Context, ps *redis.PubSub) error {
	msg, err := ps.ReceiveTimeout(ctx, confirmWait)
	if err != nil {
		return err
	}
	if s, ok := msg.(*redis.Subscription); !ok || s.Kind != "subscribe" || s.Channel != r.channel {
		return fmt.Errorf("got %v from redis, want the confirmation of SUBSCRIBE", msg)
	}
	return nil
}

// run delivers from ps until ctx ends, replacing ps when its connection
// breaks.
func (r *Redis) run(ctx context.Context, ps *redis.PubSub, deliver func(perch.FanoutMessage), lost func()) {
	for {
		err := r.receive(ctx, ps, deliver, lost)
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("fanout: redis subscription broken; subscribing again", "channel", r.channel, "err", err)
		if ps = r.resubscribe(ctx); ps == nil {
			return
		}
		lost()
	}
}

// resubscribe subscribes again, backing off between attempts, until it
// succeeds or ctx ends (nil).
func (r *Redis) resubscribe(ctx context.Context) *redis.PubSub {
	delay := minBackoff
	for {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		ps, err := r.subscribe(ctx)
		if err == nil {
			return ps
		}
		if ctx.Err() != nil {
			return nil
		}
		r.log.Warn("fanout: redis subscription failed; retrying", "channel", r.channel, "in", delay, "err", err)
		delay = min(2*delay, maxBackoff)
	}
}

// receive delivers messages from ps until its connection fails or ctx
// ends, then closes ps.
func (r *Redis) receive(ctx context.Context, ps *redis.PubSub, deliver func(perch.FanoutMessage), lost func()) error {
	defer ps.Close()
	// Receive does not watch ctx; closing ps is what interrupts it.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	pinged := false
	for {
		wait := r.pingAfter
		if pinged {
			wait = r.pongWait
		}
		msg, err := ps.ReceiveTimeout(ctx, wait)
		var netErr net.Error
		switch {
		case err == nil:
		case errors.As(err, &netErr) && netErr.Timeout() && !pinged:
			// A quiet channel, or a dead peer: only a reply tells.
			if err := ps.Ping(ctx); err != nil {
				return err
			}
			pinged = true
			continue
		case errors.As(err, &netErr) && netErr.Timeout():
			return fmt.Errorf("no reply to PING within %s: %w", r.pongWait, err)
		default:
			return err
		}
		pinged = false
		switch msg := msg.(type) {
		case *redis.Message:
			var m perch.FanoutMessage
			if err := json.Unmarshal([]byte(msg.Payload), &m); err != nil {
				// Someone else's message on our channel: not ours to stop for.
				r.log.Warn("fanout: skipping undecodable message", "channel", msg.Channel, "bytes", len(msg.Payload), "err", err)
				continue
			}
			deliver(m)
		case *redis.Subscription:
			// go-redis may reconnect and subscribe again by itself
			// without an error reaching us (a connection handed off on a
			// maintenance notification); this confirmation is the sign.
			if msg.Kind == "subscribe" {
				lost()
			}
		}
	}
}
