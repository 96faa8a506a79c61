package perch

import "time"

// The states of a workflow's delivery (a forward or an e-mail a run
// queued), as the runs page and the failed deliveries show them.
const (
	DeliveryQueued    = "queued"    // waiting for its first attempt
	DeliveryDelivered = "delivered" // carried out
	DeliveryRetrying  = "retrying"  // failed at least once; tried again at next_attempt_at
	DeliveryRefused   = "refused"   // the SSRF guard refused its address: given up at once, never retried
	DeliveryGivenUp   = "given_up"  // failed until WorkflowRetryFor ran out
)

// Kinds of delivery.
const (
	DeliveryForward = "forward"
	DeliveryEmail   = "email"
)

// Delivery is what became of one forward or e-mail a workflow run queued.
type Delivery struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`  // DeliveryForward, DeliveryEmail
	State string `json:"state"` // DeliveryQueued, …
	// Attempts is how many attempts failed (a delivered job's successful
	// one not counted).
	Attempts int `json:"attempts"`
	// NextAttemptAt is when it is tried next; null once it is delivered,
	// refused or given up.
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	// LastError says why the last attempt failed ("" before any failed);
	// for a refused one, the guard's reason.
	LastError  string     `json:"last_error"`
	QueuedAt   time.Time  `json:"queued_at"`
	FinishedAt *time.Time `json:"finished_at"` // when it was delivered, refused or given up
}

// Finished reports whether nothing more will be tried (delivered, refused
// or given up).
func (d Delivery) Finished() bool {
	return d.State == DeliveryDelivered || d.State == DeliveryRefused || d.State == DeliveryGivenUp
}

// FailedDelivery is a delivery that was refused or given up, as an
// organisation's list of failed deliveries shows it.
type FailedDelivery struct {
	Delivery
	WorkflowID     string `json:"workflow_id"`
	WorkflowName   string `json:"workflow_name"` // "" when the workflow was deleted since
	RunID          string `json:"run_id"`        // "" for one queued before runs named their deliveries
	NotificationID string `json:"notification_id"`
	// Title is the title of the notification it carried.
	Title string `json:"title"`
	// Target is where it went: a forward's scheme and host (never its path
	// or query, which may hold a token), an e-mail step's "owners",
	// "admins" or team id.
	Target string `json:"target"`
}
