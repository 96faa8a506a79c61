package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/perch-dev/perch"
)

// DeviceSessionRetention is how long a device sign-in is kept past its
// expiry before PruneSessions deletes it: long enough that an app still
// polling hears "expired" rather than "not found".
const DeviceSessionRetention = time.Hour

const deviceSessionColumns = `id, port, code_challenge, client_name, client_ip, user_code_hash, status, COALESCE(user_id, ''),
	COALESCE(code_hash, ''), user_code_confirmed, created_at, expires_at, decided_at, exchanged_at`

func (s *Store) scanDeviceSession(row interface{ Scan(...any) error }) (*perch.DeviceSession, error) {
	var d perch.DeviceSession
	var created, expires int64
	var decided, exchanged sql.NullInt64
	if err := row.Scan(&d.ID, &d.Port, &d.CodeChallenge, &d.ClientName, &d.ClientIP, &d.UserCodeHash, &d.Status, &d.UserID,
		&d.CodeHash, &d.UserCodeConfirmed, &created, &expires, &decided, &exchanged); err != nil {
		return nil, err
	}
	d.CreatedAt, d.ExpiresAt, d.DecidedAt, d.ExchangedAt = fromMS(created), fromMS(expires), fromNullMS(decided), fromNullMS(exchanged)
	if d.Status != perch.DeviceExchanged && !d.ExpiresAt.After(s.now()) {
		d.Status = perch.DeviceExpired
	}
	return &d, nil
}

// CreateDeviceSession records a pending desktop sign-in for req: the app
// that listens on req.Port and holds the verifier of req.CodeChallenge. It
// expires perch.DeviceSessionTTL from now.
func (s *Store) CreateDeviceSession(ctx context.Context, req perch.DeviceRequest) (*perch.DeviceSession, error) {
	now := s.now()
	d := &perch.DeviceSession{ID: perch.DeviceSessionPrefix + newID(), Port: req.Port, CodeChallenge: req.CodeChallenge,
		ClientName: req.ClientName, ClientIP: req.ClientIP, UserCodeHash: req.UserCodeHash,
		Status: perch.DevicePending, CreatedAt: now, ExpiresAt: now.Add(perch.DeviceSessionTTL)}
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO device_sessions
		(id, port, code_challenge, client_name, client_ip, user_code_hash, status, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), d.ID, d.Port, d.CodeChallenge, d.ClientName, d.ClientIP, d.UserCodeHash,
		d.Status, ms(d.CreatedAt), ms(d.ExpiresAt))
	if err != nil {
		return nil, err
	}
	return d, nil
}

// DeviceSession returns the desktop sign-in with id, its status reading
// expired once past its expiry (unless exchanged), or ENOTFOUND.
func (s *Store) DeviceSession(ctx context.Context, id string) (*perch.DeviceSession, error) {
	d, err := s.scanDeviceSession(s.r.QueryRowContext(ctx, s.q(`SELECT `+deviceSessionColumns+` FROM device_sessions WHERE id = ?`), id))
	return d, notFound(err, "Sign-in request")
}

// ApproveDeviceSession records that userID approved the pending sign-in id,
// having typed its user code when userCodeConfirmed (the caller checked
// it), and issued the one-time code with hash codeHash. It returns the
// sign-in as it now is, or ENOTFOUND, perch.ErrDeviceExpired, or ECONFLICT
// when it was already approved or denied.
func (s *Store) ApproveDeviceSession(ctx context.Context, id, userID, codeHash string, userCodeConfirmed bool) (*perch.DeviceSession, error) {
	return s.decideDeviceSession(ctx, id, userID, perch.DeviceApproved, sql.NullString{String: codeHash, Valid: true}, userCodeConfirmed)
}

// DenyDeviceSession records that userID refused the pending sign-in id. It
// returns the sign-in as it now is, or the errors of ApproveDeviceSession.
func (s *Store) DenyDeviceSession(ctx context.Context, id, userID string) (*perch.DeviceSession, error) {
	return s.decideDeviceSession(ctx, id, userID, perch.DeviceDenied, sql.NullString{}, false)
}

func (s *Store) decideDeviceSession(ctx context.Context, id, userID, status string, codeHash sql.NullString, confirmed bool) (*perch.DeviceSession, error) {
	now := ms(s.now())
	// Conditional on pending and unexpired, so of two answers racing (approve
	// in one tab, deny in another) exactly one is recorded.
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE device_sessions SET status = ?, user_id = ?, code_hash = ?, user_code_confirmed = ?, decided_at = ?
		WHERE id = ? AND status = 'pending' AND expires_at > ?`), status, userID, codeHash, confirmed, now, id, now)
	if err != nil {
		return nil, err
	}
	d, err := s.DeviceSession(ctx, id)
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, err
	} else if n == 0 {
		return nil, whyUnchanged(d.CheckDecidable(), "The sign-in request cannot be answered now.")
	}
	return d, nil
}

// ExchangeDeviceSession marks the approved sign-in id as exchanged: its
// tokens may be handed out now, and never again. polled says who asks: a
// status poll (true), which may take only a sign-in whose approver typed
// the user code, or the holder of the one-time code (false). Of any number
// of callers racing, exactly one gets nil; the others get ECONFLICT. A
// sign-in that is not approved is ECONFLICT too, one a poll may not take
// perch.ErrDeviceCallbackOnly, one past its expiry perch.ErrDeviceExpired,
// an unknown one ENOTFOUND.
func (s *Store) ExchangeDeviceSession(ctx context.Context, id string, polled bool) error {
	now := ms(s.now())
	// The condition on user_code_confirmed holds whatever the caller read
	// before: the store, not each handler, keeps polls off the tokens.
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE device_sessions SET status = 'exchanged', exchanged_at = ?
		WHERE id = ? AND status = 'approved' AND expires_at > ? AND (user_code_confirmed OR NOT ?)`), now, id, now, polled)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	d, err := s.DeviceSession(ctx, id)
	if err != nil {
		return err
	}
	return whyUnchanged(d.CheckExchangeable(polled), "The sign-in request cannot be exchanged now.")
}

// whyUnchanged returns why a conditional update of a device sign-in changed
// nothing, from the row read after it. States and the clock only move
// forward, so why is set; fallback covers a clock set back meanwhile.
func whyUnchanged(why error, fallback string) error {
	if why != nil {
		return why
	}
	return perch.Errorf(perch.ECONFLICT, "%s", fallback)
}
