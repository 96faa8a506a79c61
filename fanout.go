package perch

import "context"

// Kinds of fan-out message.
const (
	FanoutNotification = "notification" // a stored notification to deliver
	FanoutRead         = "read"         // a user marked notifications read
	FanoutGrants       = "grants"       // a user's organisation, teams or role changed
	FanoutTokens       = "tokens"       // a webhook token was deleted, or its creator's role changed
	FanoutWake         = "wake"         // something was logged: read the store's logs (internal/feed's transport carries only these)
	FanoutRevoked      = "revoked"      // sign-ins or API tokens of a user ended: sockets opened with them close
	FanoutWorkflows    = "workflows"    // an organisation's workflows changed: instances compile them afresh
	FanoutPreferences  = "preferences"  // a user's preferences changed: their clients follow them and hear of it
)

// FanoutMessage travels from the instance where something happened to the
// WebSocket hubs of every instance.
type FanoutMessage struct {
	Kind         string        `json:"kind"`
	Notification *Notification `json:"notification,omitempty"` // FanoutNotification
	UserID       string        `json:"user_id,omitempty"`      // FanoutRead, FanoutGrants, FanoutRevoked, FanoutPreferences
	Audience     *Audience     `json:"audience,omitempty"`     // FanoutGrants: the user's audience after the change, when known
	IDs          []string      `json:"ids,omitempty"`          // FanoutRead
	Sessions     []string      `json:"sessions,omitempty"`     // FanoutRevoked: ids of the sign-ins that ended
	APITokens    []string      `json:"api_tokens,omitempty"`   // FanoutRevoked: ids of the API tokens that ended
	OrgID        string        `json:"org_id,omitempty"`       // FanoutWorkflows
	Preferences  *Preferences  `json:"preferences,omitempty"`  // FanoutPreferences: the user's preferences now
	Version      int64         `json:"version,omitempty"`      // FanoutPreferences: theirs, which grows with every change
}

// Fanout carries messages to every subscriber on every instance, this one
// included. Implementations: in-process (one instance) and Redis pub/sub
// (many); both pass the suite in internal/fanout/fanouttest.
type Fanout interface {
	// Publish hands m to every subscriber. Messages published one after the
	// other by one goroutine arrive in that order.
	Publish(ctx context.Context, m FanoutMessage) error
	// Subscribe calls deliver with every message published from now on,
	// from a single goroutine, until ctx ends. It returns once the
	// subscription is in place, so a message published after it returns is
	// delivered. When the implementation may have missed messages (a broken
	// connection), it calls lost once it is subscribed again, so that the
	// subscriber can make its clients catch up from the store.
	Subscribe(ctx context.Context, deliver func(FanoutMessage), lost func()) error
}
