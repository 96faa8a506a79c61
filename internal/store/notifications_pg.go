package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/perch-dev/perch"
)

// insertPipelined stores a batch of notifications without jobs on
// PostgreSQL in one round trip: the order lock and the batch's insert (one
// statement, insertUnnest) go to the server at once, in one implicit
// transaction (pgx's batch: the
// statements before the pipeline's one Sync), which commits, and so
// releases pg_advisory_xact_lock, when the last of them has run. It was
// five round trips a batch (take the session lock, begin, insert, commit,
// release); with the group commit's transactions a couple of
// milliseconds apart, those round trips were most of Perch's cost on
// PostgreSQL. A row whose key was stored before is read back afterwards,
// once the batch committed (seldom: redeliveries).
func (s *Store) insertPipelined(ctx context.Context, batch []NewNotification, out []Stored, now time.Time) error {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var r returned
	err = conn.Raw(func(dc any) error {
		c, err := pgxConn(dc)
		if err != nil {
			return err
		}
		cols := unnestColumns(batch)
		b := &pgx.Batch{}
		b.Queue(`SELECT pg_advisory_xact_lock($1)`, int64(notificationsLock))
		keyed := cols.key != nil
		query, args := insertUnnest, []any{cols.scopeType, cols.scopeID, cols.tab, cols.title, cols.message, cols.severity,
			cols.source, cols.url, ms(now)}
		switch {
		case cols.priority != nil:
			query, args = insertUnnestRich, append(args, cols.key, cols.priority, cols.extras)
			keyed = true // the statement returns the key, NULL for a row without
		case keyed:
			query, args = insertUnnestKeyed, append(args, cols.key)
		}
		b.Queue(query, args...)
		br := c.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
		rows, err := br.Query()
		if err != nil {
			br.Close()
			return err
		}
		var id int64
		var key sql.NullString
		dest := []any{&id, &key}
		if !keyed {
			dest = dest[:1]
		}
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				br.Close()
				return err
			}
			r.add(id, key)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			br.Close()
			return err
		}
		return br.Close() // the commit's answer
	})
	if err != nil {
		return pgError(err)
	}
	return s.pairReturned(ctx, s.r, r, now, batch, out)
}

// insertUnnest inserts a whole batch as one statement, its columns as
// arrays: one prepared statement serves every batch size. unnest keeps the
// arrays' order, so ids are given in the batch's order, which pairReturned
// relies on (as for the multi-row VALUES of insertNotifications). Every row
// of a batch is stored at the same time, so that is one value, not an
// array; and a batch without dedupe keys (the usual one: a key comes from a
// sender's delivery id or an Idempotency-Key) has no key column and no
// conflict to check. Each array is parsed by the server row by row: 10
// arrays were 19% slower than these 8 and a scalar, per row, in
// PostgreSQL's time (docs/perf.md).
const insertUnnest = `INSERT INTO notifications (scope_type, scope_id, tab, title, message, severity, source, url, created_at)
	SELECT d.*, $9::bigint FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[]) AS d
	RETURNING id`

// insertUnnestKeyed is insertUnnest for a batch with keys: a row whose
// dedupe key is stored already is skipped.
const insertUnnestKeyed = `INSERT INTO notifications (scope_type, scope_id, tab, title, message, severity, source, url, created_at, dedupe_key)
	SELECT d.scope_type, d.scope_id, d.tab, d.title, d.message, d.severity, d.source, d.url, $9::bigint, d.dedupe_key
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $10::text[])
		AS d (scope_type, scope_id, tab, title, message, severity, source, url, dedupe_key)
	ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
	RETURNING id, dedupe_key`

// insertUnnestRich is insertUnnestKeyed for a batch in which some row has
// a priority other than default or extras (docs/DESIGN.md, The rich
// notification): two arrays more, which a batch of plain notifications,
// the usual one, does not pay for.
const insertUnnestRich = `INSERT INTO notifications (scope_type, scope_id, tab, title, message, severity, source, url, created_at, dedupe_key, priority, extras)
	SELECT d.scope_type, d.scope_id, d.tab, d.title, d.message, d.severity, d.source, d.url, $9::bigint, d.dedupe_key, d.priority, d.extras
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $10::text[], $11::smallint[], $12::text[])
		AS d (scope_type, scope_id, tab, title, message, severity, source, url, dedupe_key, priority, extras)
	ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
	RETURNING id, dedupe_key`

// columns are a batch's values, column by column, for insertUnnest; key
// is nil unless some row has a dedupe key (then nil for a row without),
// priority and extras nil unless some row has a priority other than
// default or any extras (then key is made too, for insertUnnestRich).
type columns struct {
	scopeType, scopeID, tab, title, message, severity, source, url []string
	key                                                            []*string
	priority                                                       []int16
	extras                                                         []*string
}

func unnestColumns(batch []NewNotification) columns {
	n := len(batch)
	c := columns{scopeType: make([]string, n), scopeID: make([]string, n), tab: make([]string, n), title: make([]string, n),
		message: make([]string, n), severity: make([]string, n), source: make([]string, n), url: make([]string, n)}
	for i := range batch {
		nn := &batch[i]
		no := &nn.Notification
		c.scopeType[i], c.scopeID[i], c.tab[i], c.title[i] = no.Scope.Type, no.Scope.ID, no.Tab, no.Title
		c.message[i], c.severity[i], c.source[i], c.url[i] = no.Message, no.Severity, no.Source, no.URL
		if nn.DedupeKey != "" {
			if c.key == nil {
				c.key = make([]*string, n)
			}
			c.key[i] = &nn.DedupeKey
		}
		if no.Priority != perch.PriorityDefault || hasExtras(no) {
			if c.priority == nil {
				c.priority, c.extras = make([]int16, n), make([]*string, n)
				for j := range c.priority {
					c.priority[j] = perch.PriorityDefault
				}
			}
			c.priority[i] = int16(no.Priority)
			if e, ok := encodeExtras(no).(string); ok {
				c.extras[i] = &e
			}
		}
	}
	if c.priority != nil && c.key == nil {
		c.key = make([]*string, n)
	}
	return c
}

// pgxConn is the pgx connection under one of the store's PostgreSQL
// connections.
func pgxConn(dc any) (*pgx.Conn, error) {
	pc, ok := dc.(*pgConn)
	if !ok {
		return nil, errors.New("store: not a PostgreSQL connection of the store's")
	}
	sc, ok := pc.pgDriverConn.(*stdlib.Conn)
	if !ok {
		return nil, errors.New("store: not a pgx connection")
	}
	return sc.Conn(), nil
}
